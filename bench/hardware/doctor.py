"""`python -m bench doctor`: everything the GPU story needs on this machine, as a checklist, for the GPU at hand:
NVIDIA (NVML), AMD (AMD SMI, amdgpu sysfs), Apple silicon (IOAccelerator statistics, macmon), a TPU (libtpu's
monitoring SDK) or an Intel GPU (Level Zero Sysman through pyzes).

Each check is ``ok``, ``missing`` or ``unknown``, with what it found and, where something is missing, the exact command
or setting that fixes it. The checks ask the same functions the dashboard uses (bench.hardware.devices, the NVML
wrapper, the GPM and RAPL readers, the peak cache): the doctor never decides GPU usability a second way. The
framework is asked in a child process, as a training worker would load it.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, replace

from pydantic import BaseModel, ConfigDict

from bench.vocab import settings
from bench.vocab.safe_text import terminal
from bench.hardware import devices, peak_cache
from bench.hardware.monitor import amd, apple, nvml, sources
from bench.hardware.monitor.gpm import GpmReader
from bench.hardware.monitor.gpu import NVML_NA
from bench.hardware.monitor.source_types import GpuSource, figure, text
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
# the fix of a vendor's GPU that no source reads, and of its missing extras
AMD_FIX = ("Install ROCm and the amdgpu driver for this GPU (AMD's ROCm install guide: `sudo amdgpu-install "
           "--usecase=rocm`), reboot, and check that `amd-smi list` (or `rocm-smi`) lists the GPU.")
AMDSMI_FIX = ("`pip install amdsmi` (or `pip install /opt/rocm/share/amd_smi`, matching the ROCm here): AMD SMI adds "
              "the energy counter and the memory-controller activity that sysfs lacks.")
APPLE_FIX = ("Check that `ioreg -r -d 1 -w 0 -c IOAccelerator -a` prints an accelerator with PerformanceStatistics "
             "(macOS 11 or newer on Apple silicon does, without sudo).")
MACMON_FIX = "`pip install macmon-lib`: the GPU's power and IOReport usage, without sudo (ioreg gives no power)."
TPU_FIX = ("On the TPU VM: `pip install -U \"jax[tpu]\"` (JAX's TPU build brings libtpu, whose monitoring SDK reads "
           "the chips), and check that `python -c 'from libtpu.sdk import tpumonitoring'` imports.")
INTEL_FIX = ("Install Intel's GPU driver with Level Zero (Intel's client or data-center GPU install guide), then "
             "`pip install pyzes`, and check that `python -c 'import pyzes; print(pyzes.zesInit(0))'` prints 0.")
# the first check's name per vendor, and its fix where the accelerator is here but no source reads it
SOURCE_CHECK = {"apple": ("Apple GPU and its reading source", APPLE_FIX),
              "amd": ("AMD GPU and its reading source", AMD_FIX),
              "tpu": ("TPU and its reading source", TPU_FIX),
              "intel": ("Intel GPU and its reading source", INTEL_FIX)}
VENDOR_FRAMEWORK_FIX = {
    "amd": {"tensorflow": "`pip install tensorflow-rocm` (with ROCm installed)",
            "jax": "JAX's ROCm plug-in for this ROCm (`pip install jax[rocm]`; see JAX's install guide)",
            "torch": f"`pip install --force-reinstall torch --index-url {devices.ROCM_TORCH_INDEX}`"},
    "apple": {"tensorflow": "KERAS_BACKEND=torch make run (on a Mac Keras trains on the GPU through torch's MPS; "
                            "tensorflow-metal is no longer kept up)",
              "jax": "KERAS_BACKEND=torch make run (on a Mac Keras trains on the GPU through torch's MPS; jax-metal "
                     "is abandoned)",
              "torch": "make run (installs torch, whose macOS arm64 wheels carry MPS), or `pip install torch`"},
    "intel": {"tensorflow": f"KERAS_BACKEND=torch with torch's XPU build (`pip install --force-reinstall torch "
                            f"--index-url {devices.XPU_TORCH_INDEX}`): Keras reaches an Intel GPU through torch",
              "jax": f"KERAS_BACKEND=torch with torch's XPU build (`pip install --force-reinstall torch --index-url "
                     f"{devices.XPU_TORCH_INDEX}`): Keras reaches an Intel GPU through torch",
              "torch": f"`pip install --force-reinstall torch --index-url {devices.XPU_TORCH_INDEX}`"},
    "tpu": {"tensorflow": f"KERAS_BACKEND=jax with {devices.JAX_TPU_INSTALL}: Keras reaches a TPU through JAX",
            "jax": devices.JAX_TPU_INSTALL,
            "torch": f"KERAS_BACKEND=jax with {devices.JAX_TPU_INSTALL}: Keras reaches a TPU through JAX"},
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


class Report(BaseModel):
    """The checklist and whether a GPU run is possible here; its JSON form (``bench doctor --json``) is pydantic's
    ``model_dump(mode="json")``: ``gpu_ready``, then each check's fields in order."""

    model_config = ConfigDict(frozen=True)

    gpu_ready: bool
    checks: tuple[Check, ...]


def _driver(found: sources.Found) -> tuple[Check, bool]:
    """The GPU and the source its readings come from: NVML on NVIDIA (checked as it always was), AMD SMI or amdgpu
    sysfs on AMD, the IOAccelerator statistics (macmon) on a Mac, libtpu's monitoring SDK on a TPU, Level Zero
    Sysman on an Intel GPU."""
    source = found.source
    if source is not None and source.info.vendor != "nvidia":
        gpus = source.gpus()
        info = source.info
        names = ", ".join(g.name for g in gpus)
        return Check(SOURCE_CHECK[info.vendor][0], OK,
                     f"{len(gpus)} GPU(s) read by {info.name}: {names}. Utilization here is {info.utilization}"), True
    ok, reason = nvml.available()
    if ok and not reason:
        driver = text(nvml.query("nvmlSystemGetDriverVersion")) or "version unknown"
        count = nvml.query("nvmlDeviceGetCount", default=0)
        return Check("NVIDIA driver and NVML", OK, f"driver {driver}, {count} GPU(s) seen by NVML"), True
    vendor, why = found.unreadable()
    if vendor != "nvidia":  # a Mac, or an AMD card, TPU chips or an Intel GPU that no source reads
        name, fix = SOURCE_CHECK[vendor]
        return Check(name, MISSING, why or ("ioreg lists no GPU" if vendor == "apple" else "no source reads it"),
                     fix), False
    return Check("NVIDIA driver and NVML", MISSING, reason or "NVML is not usable", DRIVER_FIX), False


def _framework(backend: str, timeout_s: float, vendor: str = "nvidia") -> tuple[Check, bool]:
    """The installed framework built for this GPU (CUDA, ROCm, MPS) and listing it, asked in a child process as a
    worker would."""
    built = devices.framework_gpu_build(backend, vendor)
    probe = devices.probe_framework(backend, timeout_s=timeout_s)
    found = probe.devices
    listed = [d for d in found if any(word in d.upper() for word in ("GPU", "CUDA", "ROCM", "MPS", "XPU", "TPU"))]
    version = probe.version or "not installed"
    build = devices.GPU_BUILD.get(vendor, "GPU")
    name = f"framework with {build}, listing the GPU"
    fixes = VENDOR_FRAMEWORK_FIX.get(vendor, CUDA_BUILD_FIX)
    fix = fixes.get(backend, "")
    seen = f"{backend} {version}; built with {build}: {_word(built)}; devices it lists: {found or 'none'}"
    if probe.error and not found:
        status = UNKNOWN if "longer than" in probe.error else MISSING
        return Check(name, status, f"{seen} ({probe.error})", fix), False
    if listed and built is not False:
        return Check(name, OK, seen), True
    return Check(name, MISSING, seen, fix), False


def _source_readings(source: GpuSource, tried: dict[str, str]) -> list[Check]:
    """One reading of GPU 0 from a non-NVIDIA source: what it gave, and each figure it cannot give with the reason;
    and the optional source that would add figures (AMD SMI over sysfs, macmon over ioreg) where it is missing."""
    info = source.info
    collector = source.collector([0])
    reading = collector.collect()[0]
    shown = {"util_percent": ("utilization", "%.0f %%"), "mem_used_mib": ("memory in use", "%.0f MiB"),
             "mem_total_mib": ("memory total", "%.0f MiB"), "power_w": ("power", "%.1f W"),
             "temp_c": ("temperature", "%.0f °C"), "sm_clock_mhz": ("clock", "%.0f MHz"),
             "energy_j": ("energy counter", "%.0f J"), "tensor_active_percent": ("tensor activity", "%.0f %%")}
    got = [f"{label} {fmt % getattr(reading, name)}" for name, (label, fmt) in shown.items()
           if getattr(reading, name) is not None]
    got += [f"{labels_of(shown).get(name, name)} {why}" for name, why in collector.not_measured.get("gpu:0", {}).items()]
    collector.close()
    labels = {**labels_of(shown), "sm_active_percent": "SM activity",
              "tensor_active_percent": "tensor activity", "throttle_reasons": "clock-limit reasons"}
    gaps = [f"{labels.get(name, name)}: {why.rstrip('.')}" for name, why in info.not_measured.items()]
    checks = [Check(f"GPU readings ({info.name})", OK if reading.util_percent is not None else MISSING,
                    f"GPU 0 now: {', '.join(got) or 'nothing'}. Not measured here: {'; '.join(gaps) or 'none'}",
                    "" if reading.util_percent is not None else f"{info.name} gave no utilization for GPU 0")]
    extra = {amd.SYSFS_INFO.name: (amd.AMDSMI_INFO.name, AMDSMI_FIX),
             apple.IOREG_INFO.name: (apple.MACMON_INFO.name, MACMON_FIX)}
    if info.name in extra:
        better, fix = extra[info.name]
        checks.append(Check(better, MISSING, tried.get(better, "not found"), fix))
    return checks


def labels_of(shown: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {name: label for name, (label, _) in shown.items()}


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
    energy = figure(nvml.query("nvmlDeviceGetTotalEnergyConsumption", handle), "energy_j", scale=1e-3, who="NVML",
                    sentinels=NVML_NA)
    energy_check = (Check(names[1], OK, f"{energy.value:,.0f} J so far on GPU 0") if energy.value is not None else
                    Check(names[1], MISSING, f"NVML gives no energy counter on GPU 0 ({energy.why or 'Volta and newer do'})",
                          "Energy per epoch is then power integrated over the samples, and marked as an estimate."))
    limit = figure(nvml.query("nvmlDeviceGetEnforcedPowerLimit", handle), "power_limit_w", scale=1e-3, who="NVML",
                   sentinels=NVML_NA)
    power = (Check(names[2], OK, f"{limit.value:,.0f} W on GPU 0") if limit.value is not None else
             Check(names[2], MISSING, f"NVML gives no enforced power limit on GPU 0{f' ({limit.why})' if limit.why else ''}",
                   "Power is then shown without its limit."))
    return [gpm, energy_check, power]


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
    detail = "; ".join(f"{t}: {entry.peak_gflops:,.0f} GFLOP/s" if entry else f"{t}: not measured"
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
    found = sources.find()
    unreadable = found.unreadable()[0] if found.source is None else "nvidia"
    vendor = found.source.info.vendor if found.source is not None else (
        unreadable if unreadable in ("apple", "tpu", "intel") else "nvidia")
    driver, driver_ok = _driver(found)
    framework, framework_ok = _framework(backend, framework_timeout_s, vendor)
    if not driver_ok and framework.fix:  # no framework lists a GPU without a driver
        first = "the NVIDIA driver" if vendor == "nvidia" else "the GPU's source"
        framework = replace(framework, fix=f"First {first} (see above); then {framework.fix}")
    cores = Check("CPU cores", OK, f"{hardware.cpu.model}: {hardware.cpu.logical_cores} logical cores "
                                   f"({devices.all_cores()} usable by this process), {platform.machine()}")
    readings = (_source_readings(found.source, dict(found.tried)) if found.source is not None and vendor != "nvidia"
                else _gpu_readings(driver_ok))
    checks = (driver, framework, *readings, _rapl(), cores, _peaks(hardware))
    ready = driver_ok and framework_ok and hardware.gpu_reason is None and bool(hardware.gpus)
    return Report(gpu_ready=ready, checks=checks)


def render(report: Report) -> str:
    """The checklist as text for a terminal."""
    marks = {OK: "ok     ", MISSING: "missing", UNKNOWN: "unknown"}
    lines = [f"GPU run possible here: {'yes' if report.gpu_ready else 'no'}"]
    for check in report.checks:
        lines.append(f"[{marks[check.status]}] {terminal(check.name)}: {terminal(check.detail)}")
        if check.fix:
            lines.append(f"           fix: {terminal(check.fix)}")
    return "\n".join(lines)


def _word(value: bool | None) -> str:
    return "unknown" if value is None else ("yes" if value else "no")
