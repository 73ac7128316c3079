"""The typed records a run's analysis fills: a run's summary (:class:`RunSummary`) with its diagnosis
(:class:`Diagnosis`), a comparison's pair (:class:`Pair`) and a sweep's point (:class:`SweepRow`, :class:`SweepSpeedup`).

Types only, each with its JSON form (``to_dict``), the trusted reading of what this project wrote (``of``) and the
checked reading of a file (``from_dict``). The arithmetic that fills them lives in bench.analysis (metrics,
diagnosis, run_summary, compare, sweeps) and imports them from here; bench.records builds the documents that carry
them. Like bench.readings, this module sits in the vocabulary at the bottom of the engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.readings import (as_read, check_number, energy_map, extra_keys, fail, is_int, is_number, json_object,
                            optional_text, optional_words, show_value, text_map)


# -- a run's diagnosis (filled by bench.analysis.diagnosis.diagnose) ---------------------------------------------------
KINDS = ("host-bound", "compute-bound", "input-bound", "undetermined")


@dataclass(frozen=True)
class Diagnosis:
    """One run's verdict: ``kind`` (one of KINDS), the sentence that says why (``verdict``, which ends with the knob),
    the knob alone, the figures it weighed (``evidence``: name -> number, text or None) and what it lacked."""

    kind: str
    verdict: str
    knob: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)  # keys added by later versions, kept as they are
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)  # as read: written back the same

    @classmethod
    def from_dict(cls, data: Any, path: str = "diagnosis") -> Diagnosis:
        """A diagnosis from a record file, checked: a wrong type or a number out of its bounds is refused."""
        raw = json_object(data, path)
        if raw.get("kind") not in KINDS:
            raise fail(f"{path}.kind", f"must be one of {', '.join(KINDS)}, got {show_value(raw.get('kind'))}")
        if not isinstance(raw.get("verdict"), str):
            raise fail(f"{path}.verdict", f"must be text, got {show_value(raw.get('verdict'))}")
        optional_text(raw, "knob", path)
        for name, value in json_object(raw.get("evidence", {}), f"{path}.evidence").items():
            if is_number(value):
                check_number(value, name, f"{path}.evidence.{name}")
            elif value is not None and not isinstance(value, str):
                raise fail(f"{path}.evidence.{name}", f"must be a number, text or null, got {show_value(value)}")
        missing = raw.get("missing", [])
        if not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
            raise fail(f"{path}.missing", f"must be a list of text, got {show_value(missing)}")
        return cls.of(raw)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Diagnosis:
        """A diagnosis this project wrote (a stored summary), taken as it is (``from_dict`` is for files)."""
        return cls(kind=data["kind"], verdict=data["verdict"], knob=data.get("knob"),
                   evidence=dict(data.get("evidence") or {}), missing=tuple(data.get("missing") or ()),
                   extra=extra_keys(data, _DIAGNOSIS_KEYS), keys=tuple(data))

    def to_dict(self) -> dict[str, Any]:
        out = {"verdict": self.verdict, "kind": self.kind, "knob": self.knob, "evidence": dict(self.evidence),
               "missing": list(self.missing), **self.extra}
        return as_read(out, self.keys)


_DIAGNOSIS_KEYS = ("verdict", "kind", "knob", "evidence", "missing")


# -- a run's summary (filled by bench.analysis.run_summary.summarize) ---------------------------------------------------
@dataclass(frozen=True)
class RunSummary:
    """A run's ``summary`` block, typed. Every figure is None where it was not measured; a map's value is None for a
    device whose figure was not measured, with the reason in the matching ``*_reasons``. Read from a stored record,
    it keeps the keys it was written with (an older summary lacks the later figures, which read as None)."""

    steady_epoch_seconds: float | None = None  # median of epochs 2..N
    steady_samples_per_s: float | None = None
    first_epoch_seconds: float | None = None  # includes tracing
    total_seconds: float | None = None
    epochs_done: int = 0
    mean_cpu_percent: float | None = None  # whole machine
    mean_process_cpu_percent: float | None = None  # the training process, 100 % a core
    mean_gpu_util_percent: float | None = None  # NVML, the GPUs the run used
    # which samples those means cover: "steady epochs" unless they held too few samples (shorter than the sampling
    # interval), when a wider window that includes tracing or start-up stands in and reads low
    cpu_util_window: str | None = None
    gpu_util_window: str | None = None
    steady_samples: int = 0
    peak_process_rss_mib: float | None = None
    diagnosis: Diagnosis | None = None  # None: written before diagnoses were kept
    energy_j_per_epoch: dict[str, float | None] | None = None  # device -> median J a steady epoch; None: not kept
    energy_j_per_1000_samples: dict[str, float | None] | None = None
    energy_estimated: tuple[str, ...] = ()  # devices whose joules were integrated from power draw
    energy_reasons: dict[str, str] = field(default_factory=dict)
    sm_active_percent: float | None = None  # GPM, the GPUs the run trained on
    tensor_active_percent: float | None = None
    gpm_reasons: dict[str, str] = field(default_factory=dict)
    throttle_reasons: tuple[str, ...] | None = None  # seen while training; () none; None unknown
    achieved_gflops: float | None = None  # steady median
    extra: dict[str, Any] = field(default_factory=dict)  # figures added by later versions, kept as they are
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)  # as read: written back the same

    @classmethod
    def from_dict(cls, data: Any, path: str = "summary") -> RunSummary:
        """A summary from a record file, checked: each figure of its declared kind and within its bounds."""
        raw = json_object(data, path)
        for key, bound in _SUMMARY_NUMBERS.items():
            if raw.get(key) is not None:
                check_number(raw[key], bound, f"{path}.{key}")
        for key in _SUMMARY_COUNTS:
            if key in raw and not (is_int(raw[key]) and raw[key] >= 0):
                raise fail(f"{path}.{key}", f"must be a whole number, got {show_value(raw[key])}")
        for key in _SUMMARY_TEXTS:
            optional_text(raw, key, path)
        for key in _SUMMARY_ENERGY:
            energy_map(raw, key, path)
        for key in _SUMMARY_REASONS:
            text_map(raw, key, path)
        for key in _SUMMARY_WORDS:
            optional_words(raw, key, path)
        if raw.get("diagnosis") is not None:
            Diagnosis.from_dict(raw["diagnosis"], f"{path}.diagnosis")
        return cls.of(raw)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> RunSummary:
        """A summary this project wrote (a stored record), taken as it is (``from_dict`` is for files)."""
        kept, throttled = data.get("diagnosis"), data.get("throttle_reasons")
        per_epoch, per_1000 = data.get("energy_j_per_epoch"), data.get("energy_j_per_1000_samples")
        return cls(steady_epoch_seconds=data.get("steady_epoch_seconds"),
                   steady_samples_per_s=data.get("steady_samples_per_s"),
                   first_epoch_seconds=data.get("first_epoch_seconds"), total_seconds=data.get("total_seconds"),
                   epochs_done=data.get("epochs_done") or 0, mean_cpu_percent=data.get("mean_cpu_percent"),
                   mean_process_cpu_percent=data.get("mean_process_cpu_percent"),
                   mean_gpu_util_percent=data.get("mean_gpu_util_percent"),
                   cpu_util_window=data.get("cpu_util_window"), gpu_util_window=data.get("gpu_util_window"),
                   steady_samples=data.get("steady_samples") or 0,
                   peak_process_rss_mib=data.get("peak_process_rss_mib"),
                   diagnosis=Diagnosis.of(kept) if kept else None,
                   energy_j_per_epoch=dict(per_epoch) if per_epoch is not None else None,
                   energy_j_per_1000_samples=dict(per_1000) if per_1000 is not None else None,
                   energy_estimated=tuple(data.get("energy_estimated") or ()),
                   energy_reasons=dict(data.get("energy_reasons") or {}),
                   sm_active_percent=data.get("sm_active_percent"),
                   tensor_active_percent=data.get("tensor_active_percent"),
                   gpm_reasons=dict(data.get("gpm_reasons") or {}),
                   throttle_reasons=tuple(throttled) if throttled is not None else None,
                   achieved_gflops=data.get("achieved_gflops"),
                   extra=extra_keys(data, _SUMMARY_KEYS), keys=tuple(data))

    def to_dict(self) -> dict[str, Any]:
        """The summary as a record holds it (JSON)."""
        out: dict[str, Any] = {
            **{k: getattr(self, k) for k in _SUMMARY_KEYS if k not in ("diagnosis", "energy_estimated",
                                                                          "throttle_reasons")},
            "diagnosis": self.diagnosis.to_dict() if self.diagnosis else None,
            "energy_estimated": list(self.energy_estimated),
            "throttle_reasons": list(self.throttle_reasons) if self.throttle_reasons is not None else None,
            **self.extra,
        }
        return as_read(out, self.keys)


# each number's bounds are those of the reading it is made of (bench.limits.BOUNDS)
_SUMMARY_NUMBERS = {
    "steady_epoch_seconds": "epoch_seconds", "steady_samples_per_s": "samples_per_s",
    "first_epoch_seconds": "epoch_seconds", "total_seconds": "epoch_seconds", "mean_cpu_percent": "cpu_percent",
    "mean_process_cpu_percent": "process_cpu_percent", "mean_gpu_util_percent": "util_percent",
    "peak_process_rss_mib": "process_rss_mib", "sm_active_percent": "sm_active_percent",
    "tensor_active_percent": "tensor_active_percent", "achieved_gflops": "achieved_gflops",
}
_SUMMARY_COUNTS = ("epochs_done", "steady_samples")
_SUMMARY_TEXTS = ("cpu_util_window", "gpu_util_window")
_SUMMARY_ENERGY = ("energy_j_per_epoch", "energy_j_per_1000_samples")
_SUMMARY_REASONS = ("energy_reasons", "gpm_reasons")
_SUMMARY_WORDS = ("energy_estimated", "throttle_reasons")
_SUMMARY_KEYS = ("steady_epoch_seconds", "steady_samples_per_s", "first_epoch_seconds", "total_seconds",
                 "epochs_done", "mean_cpu_percent", "mean_process_cpu_percent", "mean_gpu_util_percent",
                 "cpu_util_window", "gpu_util_window", "steady_samples", "peak_process_rss_mib", "diagnosis",
                 "energy_j_per_epoch", "energy_j_per_1000_samples", "energy_estimated", "energy_reasons",
                 "sm_active_percent", "tensor_active_percent", "gpm_reasons", "throttle_reasons", "achieved_gflops")


# -- a comparison's pair (filled by bench.analysis.compare.pairs) ------------------------------------------------------
@dataclass(frozen=True)
class Pair:
    """One run against the baseline (the first run of a comparison): the speed-up (``bench.analysis.metrics.Speedup``'s
    figures, None without a steady epoch on both sides), the energy per steady epoch of each side (``_a`` the
    baseline, ``_b`` the other; None where not measured, with each unmeasured device and why in
    ``energy_missing``), ``energy_ratio`` (the baseline's energy per steady epoch / the other's), the hourly prices
    the user gave, the cost per steady epoch and per run at them, and ``cost_ratio``; ``headline``, the sentence a
    comparison record keeps beside its figures."""

    baseline_target: str
    target: str
    baseline_id: int | None = None
    target_id: int | None = None
    speedup_median: float | None = None
    speedup_min: float | None = None
    speedup_max: float | None = None
    total_time_ratio: float | None = None
    first_epoch_seconds_a: float | None = None
    first_epoch_seconds_b: float | None = None
    steady_epochs_a: int = 0
    steady_epochs_b: int = 0
    energy_j_per_epoch_a: float | None = None
    energy_j_per_epoch_b: float | None = None
    energy_ratio: float | None = None
    energy_missing: dict[str, str] = field(default_factory=dict)
    price_per_hour_a: float | None = None
    price_per_hour_b: float | None = None
    cost_per_epoch_a: float | None = None
    cost_per_epoch_b: float | None = None
    cost_per_run_a: float | None = None
    cost_per_run_b: float | None = None
    cost_ratio: float | None = None
    headline: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys added by later versions, kept as they are

    @classmethod
    def from_dict(cls, data: Any, path: str = "pair") -> Pair:
        """A pair from a comparison file, checked: text where text belongs, finite numbers of sane size elsewhere."""
        raw = json_object(data, path)
        for key in ("baseline_target", "target"):
            if not isinstance(raw.get(key), str):
                raise fail(f"{path}.{key}", f"must be text, got {show_value(raw.get(key))}")
        optional_text(raw, "headline", path)
        for key in _PAIR_NUMBERS:
            if raw.get(key) is not None:
                check_number(raw[key], key, f"{path}.{key}")
        for key in ("baseline_id", "target_id", "steady_epochs_a", "steady_epochs_b"):
            if raw.get(key) is not None and not is_int(raw[key]):
                raise fail(f"{path}.{key}", f"must be a whole number or null, got {show_value(raw[key])}")
        text_map(raw, "energy_missing", path)
        return cls.of(raw)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Pair:
        """A pair this project wrote, taken as it is (``from_dict`` is for files)."""
        return cls(baseline_target=data["baseline_target"], target=data["target"],
                   baseline_id=data.get("baseline_id"), target_id=data.get("target_id"),
                   **{k: data.get(k) for k in _PAIR_NUMBERS},
                   steady_epochs_a=data.get("steady_epochs_a") or 0, steady_epochs_b=data.get("steady_epochs_b") or 0,
                   energy_missing=dict(data.get("energy_missing") or {}), headline=data.get("headline"),
                   extra=extra_keys(data, _PAIR_KEYS))

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in _PAIR_KEYS if k != "headline"}
        if self.headline is not None:
            out["headline"] = self.headline
        return {**out, "energy_missing": dict(self.energy_missing), **self.extra}


_PAIR_NUMBERS = ("speedup_median", "speedup_min", "speedup_max", "total_time_ratio", "first_epoch_seconds_a",
                 "first_epoch_seconds_b", "energy_j_per_epoch_a", "energy_j_per_epoch_b", "energy_ratio",
                 "price_per_hour_a", "price_per_hour_b", "cost_per_epoch_a", "cost_per_epoch_b", "cost_per_run_a",
                 "cost_per_run_b", "cost_ratio")
_PAIR_KEYS = ("baseline_id", "baseline_target", "target_id", "target", *_PAIR_NUMBERS[:6], "steady_epochs_a",
              "steady_epochs_b", *_PAIR_NUMBERS[6:], "energy_missing", "headline")


# -- a sweep's point (filled by bench.analysis.sweeps.sweep_row) -------------------------------------------------------
@dataclass(frozen=True)
class SweepRow:
    """One sweep point: a finished run's settings, speed, arithmetic against the measured peak, utilization and
    verdict (``bench.analysis.sweeps.sweep_row``), with its scaling over one device once ``sweeps.with_scaling`` has seen every point. A
    dict only in a ``bench.sweep/1`` file and in a page's table (``to_dict``)."""

    size: str | None
    batch_size: int | None
    target: str
    run_id: int | None = None
    status: str | None = None
    steps_per_execution: int = 1  # 1 in records made before the setting
    devices: int = 1
    per_device_batch_size: int | None = None
    params: int | None = None
    flops_per_sample: float | None = None
    steady_epoch_seconds: float | None = None
    samples_per_s: float | None = None
    achieved_gflops: float | None = None
    peak_gflops: float | None = None
    peak_fraction: float | None = None
    peak_stale: bool = False
    mean_gpu_util_percent: float | None = None
    sm_active_percent: float | None = None
    tensor_active_percent: float | None = None
    mean_cpu_percent: float | None = None
    mean_process_cpu_percent: float | None = None
    # the samples the utilization means cover (bench.analysis.metrics.WINDOW_NAMES); not "steady epochs" = read with care
    sample_interval_s: float | None = None
    utilization_window: str | None = None
    diagnosis: str | None = None
    diagnosis_kind: str | None = None
    speedup_over_one_device: float | None = None
    scaling_efficiency: float | None = None
    scaling_diagnosis: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys of later versions, kept as they are
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)  # as read: written back the same

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> SweepRow:
        """A row this project wrote (a sweep file, after ``records.Sweep.from_dict`` checked its numbers), typed
        without further checks; written back by ``to_dict`` with the keys it had."""
        known = {f.name for f in dataclasses.fields(cls)} - {"extra", "keys"}
        values = {k: v for k, v in data.items() if k in known and v is not None}
        values.setdefault("target", str(data.get("target")))
        return cls(size=values.pop("size", None), batch_size=values.pop("batch_size", None),
                   target=values.pop("target"), **values,
                   extra={k: v for k, v in data.items() if k not in known}, keys=tuple(data))

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("extra", "keys")}
        out.update(self.extra)
        return out if self.keys is None else {k: out[k] for k in self.keys}

    def point(self) -> tuple[Any, ...]:
        """(size, batch size, steps per execution, device count): what one point of a sweep varies."""
        return self.size, self.batch_size, self.steps_per_execution, self.devices


@dataclass(frozen=True)
class SweepSpeedup:
    """The speed-up of one target over another at one sweep point (``bench.analysis.sweeps.sweep_speedups``)."""

    size: str | None
    batch_size: int | None
    steps_per_execution: int
    devices: int
    params: int | None
    speedup: float
