"""The teacher's assignment and a student's request, as records: what a lab allows (the data set, the model
families and sizes, the epoch and batch-size ranges, the targets, how many runs a student may have queued) and what
one student asks for within it. Both are pydantic models on bench.vocab.record_base.Record, typed with
bench.vocab.limits, so the JSON API reads them with pydantic (docs/schemas/lab-*.schema.json are generated from
them) and a bad value is refused naming its field (:class:`LabError`)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from typing_extensions import Self

from bench.plans import datasets, models
from bench.vocab.config import BATCH_MAX, EPOCHS_MAX, RunConfig
from bench.vocab.errors import RecordError
from bench.vocab.limits import Count, Line, Whole
from bench.vocab.record_base import PathError, Record, cause_of, record_error
from bench.vocab.target import Target, TargetText

CAP_MAX = 20  # runs one student may have queued at most, whatever the teacher sets
TITLE_MAX = 120
LIMIT_SAMPLES_DEFAULT = 2000  # a lab run trains on this many samples unless the teacher says otherwise


class LabError(ValueError):
    """A request the lab refuses: ``field`` names what is wrong (None: the lab itself, closed or not open),
    ``status`` the HTTP status the API answers with."""

    def __init__(self, message: str, field: str | None = None, status: int = 422) -> None:
        super().__init__(message)
        self.field, self.status = field, status


def _check_family(family: str) -> str | None:
    return None if family in models.FAMILIES else f"must be one of {', '.join(models.FAMILIES)}, got {family!r}"


class Assignment(Record):
    """What the teacher allows: every student's run is one of these."""

    model_config = ConfigDict(extra="forbid")
    PATH: ClassVar[str] = ""

    title: Line = "Lab"
    dataset: Line = "synthetic-mnist"
    families: tuple[Line, ...] = ("mlp",)
    sizes: tuple[Line, ...] = ("xs", "s")
    epochs_min: Whole = 1
    epochs_max: Whole = 3
    batch_min: Count = 32
    batch_max: Count = 512
    targets: tuple[TargetText, ...] = ("cpu",)  # each in its canonical text
    cap: Whole = 2  # runs a student may have queued at once
    limit_samples: Whole | None = LIMIT_SAMPLES_DEFAULT  # samples each run trains on (None: the whole set)

    @model_validator(mode="after")
    def _within_the_project(self) -> Self:
        if len(self.title) > TITLE_MAX:
            raise PathError("title", f"must be at most {TITLE_MAX} characters")
        if self.dataset not in datasets.DATASETS:
            raise PathError("dataset", f"must be one of {', '.join(datasets.DATASETS)}, got {self.dataset!r}")
        data = datasets.DATASETS[self.dataset]
        if not self.families:
            raise PathError("families", "must name at least one model family")
        for i, family in enumerate(self.families):
            problem = _check_family(family)
            if problem:
                raise PathError(f"families[{i}]", problem)
            if not models.compatible(family, data.modality, data.input_shape):
                raise PathError(f"families[{i}]", f"{family} does not fit {self.dataset}")
        if not self.sizes:
            raise PathError("sizes", "must name at least one size")
        for i, size in enumerate(self.sizes):
            if size not in models.SIZES:
                raise PathError(f"sizes[{i}]", f"must be one of {', '.join(models.SIZES)}, got {size!r}")
        if not 1 <= self.epochs_min <= self.epochs_max <= EPOCHS_MAX:
            raise PathError("epochs_max", f"the epochs must be 1 <= epochs_min <= epochs_max <= {EPOCHS_MAX}")
        if not 1 <= self.batch_min <= self.batch_max <= BATCH_MAX:
            raise PathError("batch_max", f"the batch sizes must be 1 <= batch_min <= batch_max <= {BATCH_MAX}")
        if not self.targets:
            raise PathError("targets", "must name at least one target (cpu, gpu:0, ...)")
        if not 1 <= self.cap <= CAP_MAX:
            raise PathError("cap", f"must be a whole number from 1 to {CAP_MAX}, got {self.cap}")
        if self.limit_samples is not None and self.limit_samples < 1:
            raise PathError("limit_samples", "must be at least 1 (or null for the whole set)")
        return self


class Choice(Record):
    """What one student asks to train, within the assignment."""

    model_config = ConfigDict(extra="forbid")
    PATH: ClassVar[str] = ""

    student: Line
    family: Line
    size: Line
    batch_size: Count
    epochs: Whole
    target: TargetText
    token: Line | None = Field(default=None, description="the token the lab gave this name at its first run")

    def problem(self, assignment: Assignment) -> LabError | None:
        """What in this choice the assignment does not allow (naming the field), or None."""
        a = assignment
        checks: list[tuple[str, bool, str]] = [
            ("family", self.family in a.families, f"must be one of {', '.join(a.families)}"),
            ("size", self.size in a.sizes, f"must be one of {', '.join(a.sizes)}"),
            ("batch_size", a.batch_min <= self.batch_size <= a.batch_max,
             f"must be from {a.batch_min} to {a.batch_max}"),
            ("epochs", a.epochs_min <= self.epochs <= a.epochs_max, f"must be from {a.epochs_min} to {a.epochs_max}"),
            ("target", self.target in a.targets, f"must be one of {', '.join(a.targets)}"),
        ]
        for name, allowed, words in checks:
            if not allowed:
                return LabError(f"{name} {words} in this lab, got {getattr(self, name)!r}", name)
        return None

    def config(self, assignment: Assignment) -> RunConfig:
        """The run this choice is: the assignment's data set and sample limit, the choice's model, batch size,
        epochs and target; every other setting the project's default."""
        return RunConfig(dataset=assignment.dataset, model=self.family, size=self.size, epochs=self.epochs,
                         batch_size=self.batch_size, limit_samples=assignment.limit_samples,
                         **Target.parse(self.target).fields())


def read(model: type[Assignment] | type[Choice], data: Any) -> Any:
    """``data`` (decoded JSON) read as ``model``; LabError naming the field (its first part) and worded as a
    record's error is."""
    try:
        return TypeAdapter(model).validate_python(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        cause = cause_of(error)
        where = (cause.path if isinstance(cause, PathError) else "") or ".".join(str(p) for p in error["loc"][:1])
        field = where.split("[")[0].split(".")[0] if where else None
        if error["type"] == "extra_forbidden":
            allowed = ", ".join(model.model_fields)
            raise LabError(f"{field} is not a field of this request; the fields are {allowed}", field) from None
        message = str(record_error(exc, model, ""))
        raise LabError(message.split("; fix the file")[0], field or None) from None
    except RecordError as exc:  # a record's own __init__ path
        raise LabError(str(exc).split("; fix the file")[0]) from None
