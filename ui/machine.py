"""This machine as the pages see it: the devices a form offers, how many a data-parallel run may ask for, the GPU
checklist and the cached matmul peaks. The pages reach the hardware layer (bench.hardware) only through here and
ui.common, which discovers the hardware once per server process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from bench.hardware import devices, doctor, peak_cache, probe

Hardware = devices.Hardware  # what ui.common.get_hardware hands a page
ProbeError = probe.ProbeError  # a peak probe that failed (JobManager.peaks.queue's future raises it)
CHECKLIST_ICONS = {doctor.OK: ":material/check_circle:", doctor.MISSING: ":material/cancel:",
                   doctor.UNKNOWN: ":material/help:"}


def offered_devices(hardware: Hardware) -> list[str]:
    """The devices a page offers for one run (bench.hardware.devices.offered_devices)."""
    return devices.offered_devices(hardware)


def most_devices(hardware: Hardware) -> int:
    """The most devices a data-parallel run may ask for here: the cores this process may use, or the GPUs when
    there are more of them (validation then checks the count against the run's own target)."""
    return max(devices.all_cores(), len(hardware.gpus))


@st.cache_resource(show_spinner="Checking what a GPU run needs here (the framework lists its devices)…", ttl=600)
def gpu_checklist() -> doctor.Report:
    """`python -m bench doctor`'s checklist, once per server process every ten minutes (asking the framework takes
    seconds)."""
    return doctor.diagnose()


def known_peaks() -> list[dict[str, Any]]:
    """Every cached matmul peak of this machine (bench.hardware.peak_cache.known_peaks)."""
    return peak_cache.known_peaks()


def peak_source(entry: Mapping[str, Any]) -> str:
    """Where a cached peak came from, in words: sizes, repeats, date, the machine's other CPU use."""
    return peak_cache.describe(entry)
