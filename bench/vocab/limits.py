"""The bounds of every number and the rules of every text a record carries, declared once as constrained types
(``Annotated`` pydantic types): the records (bench.vocab.readings, bench.vocab.run_info, bench.vocab.record_types, bench.vocab.records,
bench.vocab.config) declare their fields with them, so one rule holds wherever a record is built (the worker, the samplers,
the supervisor), read (an import, a bundle, a store row, an MLflow artifact) or written. A number outside its bounds
(or not finite) is refused with its path, so that no page, export or store write meets an Infinity, a NaN, a date past
any calendar or an integer SQLite cannot hold; text is valid Unicode (no lone surrogate), and a line holds no control
character. What a user may ask of a run (epochs, batch size, ...) is declared here too, once (RUN SETTINGS below), and
bench.vocab.config's RunConfig declares its fields with it; what a user enters where no run config checks it (a price,
a timeout) is ENTERED below."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, StringConstraints, TypeAdapter, ValidationError

from bench.vocab.safe_text import REORDERING


@dataclass(frozen=True)
class Words:
    """How a message names what a field may hold ("a finite number from 0 to 100", "an epoch number from 1 to
    1,000,000"): carried in a type's ``Annotated`` metadata, read by bench.vocab.record_base when it words an error."""

    text: str
    always: bool = False  # say ``text`` for a wrong type too (not "must be a number")


def _number(low: float, high: float, words: str | None = None) -> Any:
    return Annotated[float, Field(strict=True, ge=low, le=high, allow_inf_nan=False),
                     Words(words or f"a finite number from {low:g} to {high:g}", always=words is not None)]


def _whole(low: int, high: int, words: str | None = None) -> Any:
    return Annotated[int, Field(strict=True, ge=low, le=high),
                     Words(words or f"a whole number from {low:,} to {high:,}", always=words is not None)]


# -- the bounds ------------------------------------------------------------------------------------------------------
TIME_MIN_S, TIME_MAX_S = 0.0, 4102444800.0  # wall-clock moments: 1970-01-01 .. 2100-01-01 (UTC)
ID_MAX = 2**63 - 1  # SQLite's largest integer
EPOCH_MAX = 1_000_000
GPU_INDEX_MAX = 1023
PRICE_PER_HOUR_MIN = 1e-6  # a normal float: a subnormal price would count as above zero and rank a machine cheapest
PRICE_PER_HOUR_MAX = 1e6  # any real machine costs less an hour; more is a typo that prints costs of inf
TEXT_MAX = 1_000_000  # characters of one text (a traceback is the longest a run keeps)
LINE_MAX = 10_000  # characters of one line (a name, a label, a device)
# characters of a name given from outside (a GPU's, a data set's or a model's a script names): two of them and the
# rest of a run's label fit one Line
NAME_MAX = 200

Timestamp = _number(TIME_MIN_S, TIME_MAX_S)  # seconds since 1970 (created_at, started_at, ...)
RunSeconds = _number(-1e7, 1e9)  # seconds from the worker's start (t_s, t_start_s, t_end_s)
Seconds = _number(0.0, 1e8)  # a duration
EpochSeconds = Annotated[float, Field(strict=True, gt=0.0, le=1e8, allow_inf_nan=False),
                         Words("a positive number", always=True)]
Percent = _number(0.0, 100.0)
ProcessPercent = _number(0.0, 100.0 * 65536)  # a process on many cores: 100 % per core
MiB = _number(0.0, 1e10)
Watts = _number(0.0, 1e6)
Celsius = _number(-273.0, 1000.0)
MHz = _number(0.0, 1e6)
Joules = _number(0.0, 1e18)
SamplesPerSecond = _number(0.0, 1e13)
Gflops = _number(0.0, 1e12)
Number = _number(-1e15, 1e15)  # any finite value of sane size (a ratio, a figure in its own unit)
Price = _number(PRICE_PER_HOUR_MIN, PRICE_PER_HOUR_MAX, f"an hourly price from {PRICE_PER_HOUR_MIN:g} to "
                                                        f"{PRICE_PER_HOUR_MAX:g}")
# what training measured may be NaN or infinite: a run whose loss diverged (exports write it as null)
Metric = Annotated[float, Field(strict=True), Words("a number")]
Id = _whole(-ID_MAX, ID_MAX)  # a run's id, a source run's id: one bound for both
Whole = _whole(-ID_MAX, ID_MAX)  # any whole number SQLite can hold (a pid, a parameter count)
Count = _whole(0, 10**12)
EpochNumber = _whole(1, EPOCH_MAX, f"an epoch number from 1 to {EPOCH_MAX:,}")
GpuIndex = _whole(0, GPU_INDEX_MAX)
Flag = Annotated[bool, Field(strict=True)]
# valid Unicode (a lone surrogate takes a page down when it is encoded), of bounded size
Text = Annotated[str, StringConstraints(max_length=TEXT_MAX), Words("text")]
# one line: no control character (a newline or an escape sequence from outside would break a table or a terminal)
Line = Annotated[str, StringConstraints(max_length=LINE_MAX, pattern=r"^[^\x00-\x1f\x7f-\x9f]*$"),
                 Words("one line of text (no control characters)", always=True)]
# a name a machine gave (a cluster node's kind, its accelerator): one line that moves nothing on screen (no bidi
# control, no line separator either), so it is drawn as it is beside a run's figures
MachineName = Annotated[str, StringConstraints(max_length=LINE_MAX,
                                               pattern="^[^\\x00-\\x1f\\x7f-\\x9f" + "".join(sorted(REORDERING)) + "]*$"),
                        Words("one line of plain text (no control or bidi character)", always=True)]
# a cluster node's id as Ray gives it (56 hex digits): letters and digits only, so a path or markup never passes for one
NODE_ID_MAX = 128
NodeId = Annotated[str, StringConstraints(min_length=1, max_length=NODE_ID_MAX, pattern=r"^[0-9A-Za-z]+$"),
                   Words(f"a node id: 1 to {NODE_ID_MAX} letters and digits", always=True)]
# a name from outside: one line of at most NAME_MAX characters (bench.vocab.safe_text.one_line makes any text one)
Name = Annotated[str, StringConstraints(max_length=NAME_MAX, pattern=r"^[^\x00-\x1f\x7f-\x9f]*$"),
                 Words(f"one line of at most {NAME_MAX} characters (no control characters)", always=True)]

# -- what a run may ask for: bench.vocab.config.RunConfig's fields, the forms' and the CLI's bounds ------------------
EPOCHS_MAX = 1000
BATCH_MAX = 65536  # the one bound of a batch size: the form, the CLI, a link and a record read from a file
SEED_MAX = 2**31 - 1
INTERVAL_MIN_S, INTERVAL_MAX_S = 0.1, 10.0
LEARNING_RATE_MAX = 10.0
STEPS_PER_EXECUTION_MAX = 1024
DEVICES_MAX = 64
WORKERS_MAX = 64
THREADS_MAX = 65536  # the cores of this machine bound a run's threads further (RunConfig.validate)
LIMIT_SAMPLES_MAX = 1_000_000_000  # more samples than any data set holds: a link's 2**63 is a typo, not a limit

Epochs = _whole(1, EPOCHS_MAX, f"a whole number from 1 to {EPOCHS_MAX:,}")
BatchSize = _whole(1, BATCH_MAX, f"a whole number from 1 to {BATCH_MAX:,}")
Seed = _whole(0, SEED_MAX, f"a whole number from 0 to {SEED_MAX:,}")
SampleIntervalSeconds = _number(INTERVAL_MIN_S, INTERVAL_MAX_S, f"a number of seconds from {INTERVAL_MIN_S:g} to "
                                                                f"{INTERVAL_MAX_S:g}")
LearningRate = Annotated[float, Field(strict=True, gt=0.0, le=LEARNING_RATE_MAX, allow_inf_nan=False),
                         Words(f"a number above 0 and at most {LEARNING_RATE_MAX:g} (empty: the optimizer's default)",
                               always=True)]
StepsPerExecution = _whole(1, STEPS_PER_EXECUTION_MAX, f"a whole number from 1 to {STEPS_PER_EXECUTION_MAX:,} (1 runs "
                                                       "one step per call, as Keras does by default)")
DeviceCount = _whole(1, DEVICES_MAX, f"a whole number from 1 to {DEVICES_MAX} (empty: the target's own)")
WorkerIndex = _whole(0, WORKERS_MAX - 1, f"a whole number from 0 to {WORKERS_MAX - 1}")
Threads = _whole(1, THREADS_MAX, f"a whole number from 1 to {THREADS_MAX:,} (empty: every core)")
SampleLimit = _whole(1, LIMIT_SAMPLES_MAX, f"a whole number from 1 to {LIMIT_SAMPLES_MAX:,} (empty: the whole set)")

# the bounds a column of the store is held to where it reads a row (bench.store.rows), by column
NAMED: dict[str, Any] = {"created_at": Timestamp, "started_at": Timestamp, "ended_at": Timestamp,
                         "achieved_gflops": Gflops, "id": Id}
_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def problem(value: Any, key: str) -> str | None:
    """What is wrong with ``value`` as the number ``key`` of NAMED (any finite number of sane size where unlisted),
    or None when it may be held."""
    if key not in _ADAPTERS:
        _ADAPTERS[key] = TypeAdapter(NAMED.get(key, Number))
    try:
        _ADAPTERS[key].validate_python(value)
    except ValidationError:
        words = next((m.text for m in getattr(NAMED.get(key, Number), "__metadata__", ()) if isinstance(m, Words)),
                     "a finite number")
        return f"must be {words}, got {value!r:.60}"
    return None


# -- what a user enters where no run config checks it ----------------------------------------------------------------
# (name) -> (low, high, what): a value must be finite, above low and at most high. The forms and the CLI's parsers
# apply them through entered_problem(); a run's own settings (epochs, batch size, ...) are the types above.
TIMEOUT_MAX_S = 86400.0  # a day
# a low of 0 is exclusive (above 0); any other low is the least value allowed
ENTERED: dict[str, tuple[float, float, str]] = {
    "price_per_hour": (PRICE_PER_HOUR_MIN, PRICE_PER_HOUR_MAX, "an hourly price"),
    "timeout_s": (0.0, TIMEOUT_MAX_S, "a timeout in seconds"),
}


def entered_problem(value: Any, key: str) -> str | None:
    """What is wrong with ``value`` entered as ``key`` of ENTERED (not a number, not finite, outside its bounds),
    naming the bounds; None when it may be used. A price is held to the records' own rule (``Price``: a normal
    float from PRICE_PER_HOUR_MIN), so one entered is one a bundle or a comparison may hold."""
    low, high, what = ENTERED[key]
    if key == "price_per_hour":
        if problem(value, "price") is None:
            return None
        return f"{what} must be a finite number from {PRICE_PER_HOUR_MIN:.6f} to {high:,.0f} (got {value!r:.60})"
    if (not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)
            or not (low < value if low == 0 else low <= value) or not value <= high):
        within = f"above {low:g} and at most {high:g}" if low == 0 else f"from {low:.6f} to {high:,.0f}"
        return f"{what} must be a finite number {within} (got {value!r:.60})"
    return None


NAMED["price"] = Price
NAMED["batch_size"] = BatchSize
NAMED["sample_interval_s"] = SampleIntervalSeconds
