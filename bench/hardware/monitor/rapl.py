"""CPU package energy from RAPL, through the Linux powercap tree (``/sys/class/powercap/intel-rapl:N``).

Each package domain (``intel-rapl:0``, ``intel-rapl:1``, ... whose ``name`` starts with "package"; AMD Zen exposes the
same tree) has a microjoule counter, ``energy_uj``, that wraps at ``max_energy_range_uj``. :class:`RaplReader` sums
the packages and turns the wrapping counters into one cumulative figure in joules, counted from the reader's start.
Where the counters cannot be read (no powercap tree in a VM or container, no package domain, ``energy_uj`` readable
only by root as on most kernels since 2020) every reading is None and ``reason`` says why, in plain words.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path

from bench.hardware.monitor.source_types import figure

__all__ = ["POWERCAP_ROOT", "RaplReader"]

logger = logging.getLogger(__name__)

POWERCAP_ROOT = Path("/sys/class/powercap")
_PACKAGE_DIR = re.compile(r"intel-rapl:\d+")


class RaplReader:
    """Cumulative CPU package joules since construction (None when RAPL is not readable; ``reason`` says why).

    Args:
        root: the powercap folder (a fake tree in tests).
    """

    def __init__(self, root: Path | str = POWERCAP_ROOT) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._domains: list[Path] = []
        self._ranges_uj: list[int | None] = []
        self._last_uj: list[int] = []
        self._total_uj = 0
        self.reason: str | None = None
        self._open()

    @property
    def readable(self) -> bool:
        return self.reason is None

    def read_j(self) -> float | None:
        """Cumulative package joules since the reader started; None when RAPL is not readable (now or any more)."""
        with self._lock:
            if self.reason is not None:
                return None
            try:
                values = [_read_int(domain / "energy_uj") for domain in self._domains]
            except OSError as exc:
                self.reason = _unreadable_reason(self.root, exc)
                logger.info("CPU energy is not measured from here on: %s", self.reason)
                return None
            for i, (before, after) in enumerate(zip(self._last_uj, values)):
                delta = after - before
                if delta < 0:  # the counter wrapped at max_energy_range_uj
                    span = self._ranges_uj[i]
                    delta = delta + span if span else 0
                self._total_uj += delta
            self._last_uj = values
            return figure(self._total_uj, "cpu_energy_j", scale=1e-6, who="RAPL").value  # the one bounds check

    def _open(self) -> None:
        if not self.root.is_dir():
            self.reason = (f"RAPL not readable here: {self.root} is absent (no powercap driver, as in most VMs and "
                           f"containers).")
            return
        domains = []
        for path in sorted(self.root.iterdir(), key=lambda p: p.name):
            if not _PACKAGE_DIR.fullmatch(path.name):
                continue
            try:
                name = (path / "name").read_text(encoding="utf-8").strip()
            except OSError:
                name = "package"
            if name.startswith("package"):
                domains.append(path)
        if not domains:
            self.reason = f"RAPL not readable here: {self.root} has no intel-rapl package domain."
            return
        try:
            self._last_uj = [_read_int(domain / "energy_uj") for domain in domains]
        except OSError as exc:
            self.reason = _unreadable_reason(self.root, exc)
            return
        self._domains = domains
        self._ranges_uj = []
        for domain in domains:
            try:
                self._ranges_uj.append(_read_int(domain / "max_energy_range_uj"))
            except OSError:
                self._ranges_uj.append(None)


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text(encoding="utf-8").strip())
    except ValueError as exc:
        raise OSError(f"{path} does not hold a whole number") from exc


def _unreadable_reason(root: Path, exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return (f"RAPL not readable here: {exc.filename or root} is readable only by root; run as root or grant "
                f"read access (chmod o+r) to measure CPU energy.")
    return f"RAPL not readable here: {exc}."
