"""`python -m bench doctor`: everything the GPU story needs on this machine, as a checklist.

Each check is ``ok``, ``missing`` or ``unknown``, with what it found and, where something is missing, the exact command
or setting that fixes it. The checks ask the same functions the dashboard uses (bench.hardware.devices, the NVML
wrapper, the GPM and RAPL readers, the peak cache): the doctor never decides GPU usability a second way. The
framework is asked in a child process, as a training worker would load it.
"""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass, replace
from typing import Any

from bench import settings
from bench.hardware import devices, peak_cache
from bench.hardware.monitor import nvml
from bench.hardware.monitor.gpm import GpmReader
from bench.hardware.monitor.rapl import POWERCAP_ROOT, RaplReader

OK, MISSING, UNKNOWN = "ok", "missing", "unknown"
DRIVER_FIX = ("Install the NVIDIA driver for this GPU (Debian/Ubuntu: `sudo apt install nvidia-driver` or "
              "`sudo ubuntu-drivers install`), reboot, and check that `nvidia-smi` lists the GPU.")
# the CUDA build of each Keras backend (the same choice `make run` makes on a machine with a driver)
CUDA_BUILD_FIX = {
    "tensorflow": "GPU=1 make run (installs `tensorflow[and-cuda]`), or `pip install 'tensorflow[and-cuda]'`",
    "jax": ("KERAS_BACKEND=jax GPU=1 make run (installs JAX's CUDA plug-in for this driver), or "
            "`pip install 'jax[cuda13]'` (driver 580 or newer; `jax[cuda12]` for older drivers)"),
    "torch": ("KERAS_BACKEND=torch GPU=1 make run (installs torch's CUDA build, in place of a CPU build), or "
              "`pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu130` (driver 580 or "
              "newer; cu128 or cu126 for older drivers)"),
}
RAPL_FIX = (f"As root: `chmod a+r {POWERCAP_ROOT}/intel-rapl:*/energy_uj` (until the next boot; a systemd-tmpfiles "
            f"line `z {POWERCAP_ROOT}/intel-rapl:*/energy_uj 0444 - - -` keeps it), rather than running the "
            f"dashboard as root.")


RAPL_ABSENT_FIX = ("This machine exposes no RAPL (most VMs and containers do not), so CPU energy stays \"not measured\"; "
                   "on bare metal `sudo modprobe intel_rapl_common` makes it appear; then `chmod a+r` its energy_uj files.")


@dataclass(frozen=True)
class Check:
    """One item of the checklist."""

    name: str
    status: str  # OK, MISSING or UNKNOWN
    detail: str  # what was found
    fix: str = ""  # the command or setting that fixes a missing item; empty when nothing is missing


@dataclass(frozen=True)
class Report:
    """The checklist and whether a GPU run is possible here."""

    gpu_ready: bool
    checks: tuple[Check, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"gpu_ready": self.gpu_ready, "checks": [asdict(c) for c in self.checks]}


def _driver() -> tuple[Check, bool]:
    ok, reason = nvml.available()
    if ok and not reason:
        driver = nvml.query("nvmlSystemGetDriverVersion") or "version unknown"
        count = nvml.query("nvmlDeviceGetCount", default=0)
        return Check("NVIDIA driver and NVML", OK, f"driver {driver}, {count} GPU(s) seen by NVML"), True
    return Check("NVIDIA driver and NVML", MISSING, reason or "NVML is not usable", DRIVER_FIX), False


def _framework(backend: str, timeout_s: float) -> tuple[Check, bool]:
    """The installed framework built with CUDA and listing a GPU, asked in a child process as a worker would."""
    built = devices.framework_has_cuda(backend)
    probe = devices.probe_framework(backend, timeout_s=timeout_s)
    listed = [d for d in probe.get("devices") or [] if "GPU" in str(d).upper() or "CUDA" in str(d).upper()]
    version = probe.get("version") or "not installed"
    seen = f"{backend} {version}; built with CUDA: {_word(built)}; devices it lists: {probe.get('devices') or 'none'}"
    if probe.get("error") and not probe.get("devices"):
        status = UNKNOWN if "longer than" in str(probe["error"]) else MISSING
        return Check("framework with CUDA, listing the GPU", status, f"{seen} ({probe['error']})",
                     CUDA_BUILD_FIX.get(backend, "")), False
    if listed:
        return Check("framework with CUDA, listing the GPU", OK, seen), True
    return Check("framework with CUDA, listing the GPU", MISSING, seen, CUDA_BUILD_FIX.get(backend, "")), False


def _gpu_readings(driver_ok: bool) -> list[Check]:
    """GPM, the energy counter and the power limit of the first GPU NVML lists."""
    names = ("GPM (SM and tensor activity, Hopper and newer)", "energy counter", "power limit")
    if not driver_ok:
        return [Check(name, UNKNOWN, "no GPU to ask (see the driver check)") for name in names]
    handle = nvml.query("nvmlDeviceGetHandleByIndex", 0)
    reader = GpmReader(handle)
    gpm = (Check(names[0], OK, "GPM metrics are supported on GPU 0") if reader.reason is None else
           Check(names[0], MISSING, reader.reason, "A Hopper (H100) or newer GPU and driver 520 or newer give GPM; "
                 "older GPUs show NVML utilization only."))
    reader.close()
    energy_mj = nvml.query("nvmlDeviceGetTotalEnergyConsumption", handle)
    energy = (Check(names[1], OK, f"{energy_mj / 1000:,.0f} J so far on GPU 0") if energy_mj is not None else
              Check(names[1], MISSING, "NVML gives no energy counter on GPU 0 (Volta and newer do)",
                    "Energy per epoch is then power integrated over the samples, and marked as an estimate."))
    limit_mw = nvml.query("nvmlDeviceGetEnforcedPowerLimit", handle)
    power = (Check(names[2], OK, f"{limit_mw / 1000:,.0f} W on GPU 0") if limit_mw is not None else
             Check(names[2], MISSING, "NVML gives no enforced power limit on GPU 0",
                   "Power is then shown without its limit."))
    return [gpm, energy, power]


def _rapl() -> Check:
    reader = RaplReader()
    if reader.readable:
        return Check("CPU energy (RAPL)", OK, f"readable under {POWERCAP_ROOT}")
    reason = reader.reason or "not readable"
    absent = "absent" in reason or "no RAPL" in reason
    return Check("CPU energy (RAPL)", MISSING, reason, RAPL_ABSENT_FIX if absent else RAPL_FIX)


def _peaks(hardware: devices.Hardware) -> Check:
    targets = ["cpu", *(f"gpu:{g.index}" for g in hardware.gpus)]
    known = {t: peak_cache.lookup(t) for t in targets}
    missing = [t for t, entry in known.items() if entry is None]
    detail = "; ".join(f"{t}: {entry['peak_gflops']:,.0f} GFLOP/s" if entry else f"{t}: not measured"
                       for t, entry in known.items())
    if not missing:
        return Check("matmul peak cached per target", OK, detail)
    return Check("matmul peak cached per target", MISSING, detail,
                 f"`python -m bench.hardware.probe --device {missing[0]}` measures and caches it (`bench sweep` "
                 f"and the Sweep page do too, before their runs)")


def diagnose(*, framework_timeout_s: float = 60.0) -> Report:
    """Run every check (the framework's in a child process, at most ``framework_timeout_s``)."""
    backend = settings.default_backend()
    hardware = devices.discover()
    driver, driver_ok = _driver()
    framework, framework_ok = _framework(backend, framework_timeout_s)
    if not driver_ok and framework.fix:  # no framework lists a GPU without a driver
        framework = replace(framework, fix=f"First the NVIDIA driver (see above); then {framework.fix}")
    cores = Check("CPU cores", OK, f"{hardware.cpu.model}: {hardware.cpu.logical_cores} logical cores "
                                   f"({devices.all_cores()} usable by this process), {platform.machine()}")
    checks = (driver, framework, *_gpu_readings(driver_ok), _rapl(), cores, _peaks(hardware))
    ready = driver_ok and framework_ok and hardware.gpu_reason is None and bool(hardware.gpus)
    return Report(gpu_ready=ready, checks=checks)


def render(report: Report) -> str:
    """The checklist as text for a terminal."""
    marks = {OK: "ok     ", MISSING: "missing", UNKNOWN: "unknown"}
    lines = [f"GPU run possible here: {'yes' if report.gpu_ready else 'no'}"]
    for check in report.checks:
        lines.append(f"[{marks[check.status]}] {check.name}: {check.detail}")
        if check.fix:
            lines.append(f"           fix: {check.fix}")
    return "\n".join(lines)


def _word(value: bool | None) -> str:
    return "unknown" if value is None else ("yes" if value else "no")
