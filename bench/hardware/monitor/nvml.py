"""The one place that calls NVML (pynvml, from the nvidia-ml-py distribution).

Every NVML call in the project goes through :func:`query`, which initialises NVML lazily (once, under a lock), shuts
it down at interpreter exit, and turns any ``NVMLError`` (NotSupported, GpuIsLost, NoPermission, ...) into a default
value, so a caller never has to handle NVML failures itself. Whether NVML is usable at all is decided once, by
:func:`available`, which also gives the plain reason when it is not.

Modelled on nvitop's ``nvitop/api/libnvml.py`` (``nvmlQuery(func, *args, default=NA)``). Tests swap the real
module for a fake one with :func:`set_module` and drop all state with :func:`reset`.
"""

from __future__ import annotations

import atexit
import logging
import threading
from types import ModuleType
from typing import Any

__all__ = ["NVML_MODULE", "available", "query", "reset", "set_module"]

logger = logging.getLogger(__name__)

#: The active NVML module: None until first use (then the real ``pynvml``), or a fake injected by ``set_module``.
NVML_MODULE: Any = None

NO_DRIVER_REASON = (
    "No NVIDIA driver found (NVML library not loadable): this machine has no usable NVIDIA GPU."
)
NOT_INSTALLED_REASON = (
    "pynvml (nvidia-ml-py) is not installed, so GPU metrics cannot be read: pip install nvidia-ml-py."
)
NO_GPU_REASON = "NVML found no GPU: the NVIDIA driver is loaded but reports no device."

_lock = threading.Lock()
_tried: bool = False  # has initialisation been attempted for the active module?
_initialised: bool = False  # did nvmlInit succeed (NVML calls may be made)?
_reason: str = ""  # why NVML is not usable; "" when it is
_atexit_registered: bool = False
_failed_functions: set[str] = set()  # functions already logged as failing (log each once, at debug level)


def set_module(module: Any) -> None:
    """Use ``module`` (a fake pynvml) instead of the real pynvml, and forget any previous initialisation."""
    global NVML_MODULE
    reset()
    with _lock:
        NVML_MODULE = module


def reset() -> None:
    """Shut NVML down if it was initialised, go back to the real pynvml, and forget all state (for tests)."""
    global NVML_MODULE
    _shutdown()
    with _lock:
        NVML_MODULE = None
        _failed_functions.clear()


def available() -> tuple[bool, str]:
    """Whether NVML can be used and sees at least one GPU.

    Returns:
        ``(True, "")`` when NVML initialised and reports one GPU or more; otherwise ``(False, reason)`` with a plain
        sentence saying why (no driver, pynvml not installed, no GPU, NVML error).
    """
    _ensure_init()
    return (_reason == "", _reason)


def query(func_name: str, *args: Any, default: Any = None) -> Any:
    """Call ``pynvml.<func_name>(*args)`` and return its result, or ``default`` when it cannot be read.

    NVML is initialised first if needed. Any ``NVMLError`` (NotSupported, GpuIsLost, ...), a function missing from an
    old pynvml, or NVML not being usable at all gives ``default``. A ``bytes`` result is decoded to ``str``.
    """
    if not _ensure_init():
        return default
    module = NVML_MODULE
    error_base: type[BaseException] = getattr(module, "NVMLError", Exception)
    try:
        func = getattr(module, func_name)
        result = func(*args)
    except (error_base, AttributeError) as exc:  # type: ignore[misc]
        if func_name not in _failed_functions:
            _failed_functions.add(func_name)
            logger.debug("NVML %s failed (%s: %s); returning the default", func_name, type(exc).__name__, exc)
        return default
    if isinstance(result, bytes):
        return result.decode("utf-8", errors="replace")
    return result


def _ensure_init() -> bool:
    """Initialise NVML once for the active module; return whether NVML calls may be made."""
    global NVML_MODULE, _tried, _initialised, _reason, _atexit_registered
    if _tried:
        return _initialised
    with _lock:
        if _tried:
            return _initialised
        module = NVML_MODULE
        if module is None:
            try:
                import pynvml  # noqa: PLC0415 - imported lazily so a machine without it still runs
            except ImportError:
                _reason = NOT_INSTALLED_REASON
                _tried = True
                return False
            module = NVML_MODULE = pynvml
        _initialised, _reason = _init_module(module)
        if _initialised and not _atexit_registered:
            atexit.register(_shutdown)
            _atexit_registered = True
        _tried = True
        return _initialised


def _init_module(module: ModuleType | Any) -> tuple[bool, str]:
    """Call nvmlInit and nvmlDeviceGetCount on ``module``; return (initialised, reason-if-unusable)."""
    error_base: type[BaseException] = getattr(module, "NVMLError", Exception)
    no_driver_errors: tuple[type[BaseException], ...] = tuple(
        cls
        for cls in (
            getattr(module, "NVMLError_LibraryNotFound", None),
            getattr(module, "NVMLError_DriverNotLoaded", None),
        )
        if isinstance(cls, type)
    )
    try:
        module.nvmlInit()
    except no_driver_errors:
        return False, NO_DRIVER_REASON
    except error_base as exc:  # type: ignore[misc]
        return False, f"NVML could not start ({type(exc).__name__}: {exc}): GPU metrics are not available."
    except OSError as exc:
        return False, f"{NO_DRIVER_REASON} ({exc})"
    try:
        count = int(module.nvmlDeviceGetCount())
    except error_base as exc:  # type: ignore[misc]
        return True, f"NVML started but could not count GPUs ({type(exc).__name__}: {exc})."
    if count < 1:
        return True, NO_GPU_REASON
    return True, ""


def _shutdown() -> None:
    """Shut NVML down if this module initialised it; safe to call more than once."""
    global _tried, _initialised, _reason
    with _lock:
        module, was_initialised = NVML_MODULE, _initialised
        _tried, _initialised, _reason = False, False, ""
        if not was_initialised or module is None:
            return
        error_base: type[BaseException] = getattr(module, "NVMLError", Exception)
        try:
            module.nvmlShutdown()
        except error_base:  # type: ignore[misc]
            pass  # shutting down at exit: nothing useful to do about a failure
