"""This machine as the pages see it: the devices a form offers, how many a data-parallel run may ask for, the GPU
checklist and the cached matmul peaks. The pages reach the hardware layer (bench.hardware) only through here and
ui.common, which discovers the hardware once per server process.
"""

from __future__ import annotations


import streamlit as st

from bench.hardware import devices, doctor, peak_cache, probe
from bench.hardware.peak_cache import PeakEntry

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


def known_peaks() -> list[PeakEntry]:
    """Every cached matmul peak of this machine (bench.hardware.peak_cache.known_peaks)."""
    return peak_cache.known_peaks()


def peak_source(entry: PeakEntry) -> str:
    """Where a cached peak came from, in words: sizes, repeats, date, the machine's other CPU use."""
    return peak_cache.describe(entry)


# NVML's sentence, said the way the pages always said it (ui.live_messages.NVML_NOTE's words)
NVML_MEASURE = ("NVML's utilization: the share of time in which at least one kernel ran on the GPU, not how much of "
                "the chip was busy")


def utilization_measure(hardware: Hardware) -> tuple[str, str]:
    """(the source's name, what "GPU utilization" means on this machine's GPU), NVML's where no source answers."""
    info = hardware.gpu_source
    if info is None or info.vendor == "nvidia":
        return "NVML", NVML_MEASURE
    return info.name, info.utilization.rstrip(".")


def not_measured(hardware: Hardware) -> dict[str, str]:
    """The readings this machine's GPU source cannot give, each with why (empty for NVML and without a GPU)."""
    return dict(hardware.gpu_source.not_measured) if hardware.gpu_source is not None else {}


