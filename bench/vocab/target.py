"""Target: where a run trains, parsed once from ``cpu``, ``cpu/N``, ``gpu:N`` or ``gpus``.

A run's config stores a target as two fields, ``device`` (``cpu``, ``gpu:N``, ``gpus``) and ``cpu_threads`` (None =
all cores); Compare, Sweep and the CLI write it as one word (``cpu/2`` = the CPU with 2 threads). A Target holds both
views, compares by value and is hashable, so the engine, the pages and the charts ask it what it is (``is_cpu``,
``label``, ``keras_device``) instead of reading the text again.

Every way a device or target comes in (the CLI, the pages' fields and links, an imported record or bundle, a
script's callback, the lab) passes :func:`plain` first: NFKC-normalised, then plain printable ASCII or refused, so
two targets that look alike (``cpu`` and ``сpu`` with a Cyrillic ``с``, ``cpu`` and ``cpu`` with a zero-width space)
are never two different targets.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple

from pydantic import AfterValidator

from bench.vocab.errors import ConfigError
from bench.vocab.limits import Line, Words
from bench.vocab.readings import is_int
from bench.vocab.record_base import PathError

KINDS = ("cpu", "gpu", "gpus")
FORMS = "cpu, cpu/N, gpu:N, gpus"

_TARGET = re.compile(r"cpu(?:/(?P<threads>[0-9]+))?|gpu:(?P<index>[0-9]+)|gpus")
_BLANKS = " \t\r\n"


def plain(text: str) -> str:
    """A device or target as typed or read (``" GPU:0 "``, a full-width ``ｃｐｕ``) in the one form parsed: NFKC-
    normalised, ASCII blanks at its ends dropped, lower case.

    Raises:
        ValueError: a character that is not printable ASCII after normalising (a Cyrillic ``с``, a zero-width space,
            a word joiner, an Arabic digit): named by its code point, so the message tells apart what looks alike.
    """
    normal = unicodedata.normalize("NFKC", text).strip(_BLANKS).lower()
    odd = next(((i, c) for i, c in enumerate(normal) if not (c.isascii() and c.isprintable())), None)
    if odd is not None:
        i, char = odd
        name = unicodedata.name(char, "unnamed")
        raise ValueError(f"{text!r} holds U+{ord(char):04X} ({name}) at character {i + 1}: a device is plain ASCII "
                         f"text, one of {FORMS}; type it again")
    return normal


def _recorded(text: str) -> str:
    try:
        return plain(text)
    except ValueError as exc:
        raise PathError("", str(exc)) from None


def _canonical(text: str) -> str:
    try:
        return str(Target.parse(text))
    except ConfigError as exc:
        raise PathError("", str(exc).removeprefix("target ")) from None


# A device or target a record holds (a run config's device, a comparison's or sweep row's target, a bundle's price
# key): :func:`plain` text, normalised as read; one this version does not know ("tpu") is kept as stored, never run.
DeviceText = Annotated[Line, AfterValidator(_recorded), Words("a device like 'cpu', 'gpu:0' or 'gpus' (plain ASCII)",
                                                              always=True)]
# A target that must be one here (cpu, cpu/N, gpu:N, gpus), held in its canonical text.
TargetText = Annotated[Line, AfterValidator(_canonical), Words(f"a target: one of {FORMS}", always=True)]


@dataclass(frozen=True)
class Target:
    """One of ``cpu`` (all cores), ``cpu/N`` (N threads), ``gpu:N`` (the GPU of NVML index N), ``gpus`` (all GPUs)."""

    kind: str  # "cpu", "gpu" (one GPU) or "gpus" (every GPU, MirroredStrategy)
    index: int | None = None  # the GPU's NVML index; kind "gpu" only
    threads: int | None = None  # CPU threads; kind "cpu" only, None = all cores

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"target kind {self.kind!r} is unknown; one of {', '.join(KINDS)}")
        if (self.kind == "gpu") != (isinstance(self.index, int) and is_int(self.index) and self.index >= 0):
            raise ValueError(f"a GPU index >= 0 belongs to kind 'gpu' only (got {self.kind!r}, {self.index!r})")
        if self.threads is not None and (self.kind != "cpu" or not is_int(self.threads) or self.threads < 1):
            raise ValueError(f"a thread count >= 1 belongs to kind 'cpu' only (got {self.kind!r}, {self.threads!r})")

    # -- building ------------------------------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> Target:
        """``"cpu"``, ``"cpu/2"``, ``"gpu:0"``, ``"gpus"`` -> a Target (case and surrounding spaces ignored).

        Raises:
            ConfigError: any other text; the message says which forms are allowed.
        """
        try:
            raw = plain(text) if isinstance(text, str) else ""
        except ValueError as exc:
            raise ConfigError([f"target {exc}"]) from None
        if raw.startswith("cpu/") and not re.fullmatch(r"cpu/0*[1-9][0-9]*", raw):
            raise ConfigError([f"target {text!r}: after 'cpu/' give a thread count >= 1, e.g. cpu/1"])
        match = _TARGET.fullmatch(raw)
        if match is None:
            raise ConfigError([f"target {text!r} is not one of the forms {FORMS}"])
        return cls._from_match(match)

    @classmethod
    def from_device(cls, device: str, cpu_threads: int | None = None) -> Target:
        """The target of a config's ``device`` (``cpu``, ``gpu:N``, ``gpus``) and ``cpu_threads`` (0 or None = all
        cores; ignored off the CPU, where validation refuses it).

        Raises:
            ValueError: a malformed device or thread count; the message lists the allowed device forms.
        """
        try:
            raw = plain(device) if isinstance(device, str) else ""
        except ValueError as exc:
            raise ValueError(f"Device {exc}") from None
        match = _TARGET.fullmatch(raw)
        if match is None or match.group("threads") is not None:
            raise ValueError(f"Device {device!r} is not understood: use 'cpu' or 'gpu:N' with N a GPU index, "
                             "e.g. 'gpu:0'.")
        target = cls._from_match(match)
        if target.is_cpu and cpu_threads:
            if not is_int(cpu_threads) or cpu_threads < 1:
                raise ValueError(f"CPU threads must be a whole number >= 1, or empty for all (got {cpu_threads!r})")
            return cls("cpu", threads=cpu_threads)
        return target

    @classmethod
    def of(cls, source: Any) -> Target:
        """The target of a RunConfig or of a run record (its ``config``), typed where they were read.

        Raises:
            ValueError: the device or thread count stored there is malformed.
        """
        config = source.config if hasattr(source, "config") else source
        return cls.from_device(config.device, config.cpu_threads)

    @classmethod
    def _from_match(cls, match: re.Match[str]) -> Target:
        if match.group("index") is not None:
            return cls("gpu", index=int(match.group("index")))
        if match.group(0) == "gpus":
            return cls("gpus")
        threads = match.group("threads")
        return cls("cpu", threads=int(threads) if threads is not None else None)

    # -- views ---------------------------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __str__(self) -> str:
        if self.kind == "cpu":
            return "cpu" if self.threads is None else f"cpu/{self.threads}"
        return self.device

    @property
    def device(self) -> str:
        """The config's ``device`` field: ``cpu``, ``gpu:N`` or ``gpus``."""
        return f"gpu:{self.index}" if self.kind == "gpu" else self.kind

    @property
    def cpu_threads(self) -> int | None:
        """The config's ``cpu_threads`` field: the pinned thread count, None for all cores (and off the CPU)."""
        return self.threads

    @property
    def is_cpu(self) -> bool:
        return self.kind == "cpu"

    @property
    def is_gpu(self) -> bool:
        """One GPU or all of them."""
        return self.kind in ("gpu", "gpus")

    @property
    def label(self) -> str:
        """A short human label: "CPU (all cores)", "CPU (2 threads)", "GPU 0", "All GPUs"."""
        if self.kind == "gpu":
            return f"GPU {self.index}"
        if self.kind == "gpus":
            return "All GPUs"
        if self.threads is None:
            return "CPU (all cores)"
        return f"CPU ({self.threads} thread{'s' if self.threads != 1 else ''})"

    def label_on(self, hardware: Any) -> str:
        """The label with what ``hardware`` (a ``bench.hardware.devices.Hardware``) says: "CPU (16 cores)", "GPU 0: NVIDIA
        H100", "All 2 GPUs"."""
        if self.kind == "cpu" and self.threads is None:
            return f"CPU ({hardware.cpu.logical_cores} cores)"
        if self.kind == "gpus":
            return f"All {len(hardware.gpus)} GPUs"
        if self.kind == "gpu":
            gpu = next((g for g in hardware.gpus if g.index == self.index), None)
            return f"GPU {self.index}: {gpu.name}" if gpu else self.device
        return self.label

    @property
    def keras_device(self) -> str:
        """The name ``keras.device()`` takes inside the worker, whose visible devices were already narrowed to this
        target's: ``cpu:0``, else ``gpu:0``."""
        return "cpu:0" if self.is_cpu else "gpu:0"

    def fields(self) -> dict[str, Any]:
        """The RunConfig fields this target sets: ``{"device": ..., "cpu_threads": ...}``."""
        return {"device": self.device, "cpu_threads": self.cpu_threads}


class Resolved(NamedTuple):
    """What a target trains on, on one machine: two targets that resolve alike are one target there."""

    kind: str  # "cpu" or "gpu"
    devices: tuple[int, ...]  # the GPUs' NVML indices; () on the CPU
    threads: int | None  # CPU threads; None on a GPU

    def describe(self) -> str:
        """"the CPU with 2 threads", "GPU 0", "GPUs 0, 1"."""
        if self.kind == "cpu":
            return f"the CPU with {self.threads} thread{'s' if self.threads != 1 else ''}"
        return f"GPU{'s' if len(self.devices) != 1 else ''} {', '.join(map(str, self.devices)) or '(none)'}"


def resolve(target: Target, hardware: Any) -> Resolved:
    """What ``target`` trains on on ``hardware`` (a ``bench.hardware.devices.Hardware``): ``cpu`` is every core this
    process may use (``hardware.cores``), ``gpus`` every usable GPU."""
    if target.is_cpu:
        return Resolved("cpu", (), target.threads if target.threads is not None else hardware.cores)
    if target.kind == "gpus":
        return Resolved("gpu", tuple(gpu.index for gpu in hardware.gpus), None)
    return Resolved("gpu", (target.index,) if target.index is not None else (), None)


def _first_alike(targets: Sequence[Target], hardware: Any) -> list[int]:
    """For each of ``targets``, the index of the first one that trains on what it does on ``hardware`` (its own
    index when none before it does)."""
    first: dict[Resolved, int] = {}
    return [first.setdefault(resolve(target, hardware), i) for i, target in enumerate(targets)]


def duplicates(targets: Sequence[Target], hardware: Any) -> list[str]:
    """One message per target that trains on what an earlier one does on ``hardware`` (``cpu`` and ``cpu/2`` on a
    2-core machine, ``gpu:0`` and ``gpus`` on a one-GPU machine): the one rule for the CLI and the pages. Empty
    when every target is its own."""
    return [f"targets {targets[j]} and {targets[i]} are one target on this machine: both train on "
            f"{resolve(targets[i], hardware).describe()}; name it once"
            for i, j in enumerate(_first_alike(targets, hardware)) if j != i]


def distinct(targets: Sequence[Target], hardware: Any) -> list[Target]:
    """``targets`` less each one that trains on what an earlier one does (see :func:`duplicates`)."""
    return [target for i, (target, j) in enumerate(zip(targets, _first_alike(targets, hardware))) if j == i]


def refuse_duplicates(targets: Sequence[Target], hardware: Any) -> None:
    """Raise ConfigError naming every pair of :func:`duplicates`."""
    found = duplicates(targets, hardware)
    if found:
        raise ConfigError(found)


def of_config(config: Any) -> Target | None:
    """A run's Target from its config (a RunConfig or a run record); None when the device or thread count stored
    there is malformed (an old or foreign file)."""
    try:
        return Target.of(config)
    except (ValueError, TypeError, AttributeError):
        return None


def on_gpu(target: Target | None, placement: Any = None) -> bool | None:
    """Whether a run trains (or trained) on a GPU, one or all of them: the one rule, for the diagnosis, the sweep rows
    and the charts. Its target says (``target``, None when its config holds none this version reads); else where its
    first variable was placed (``info.placement``: a GPU or CUDA device); None when neither tells."""
    if target is not None:
        return target.is_gpu
    text = str(placement or "").lower()
    return ("gpu" in text or "cuda" in text) if text else None


def text_of_config(config: Any) -> str:
    """A run's target as text (cpu, cpu/N, gpu:N, gpus), for tables and files, from its RunConfig; its device as
    stored when that is malformed. :func:`of_config` gives the value itself."""
    found = of_config(config)
    if found is not None:
        return str(found)
    device = getattr(config, "device", None)
    return str(device) if device is not None else "?"


def canonical(value: Target | str) -> str:
    """A target's canonical text ("cpu/2"); text that is no target as it is."""
    if isinstance(value, Target):
        return str(value)
    try:
        return str(Target.parse(value))
    except ConfigError:
        return str(value)
