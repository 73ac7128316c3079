"""The one base of every record (:class:`Record`, a frozen pydantic v2 model that keeps unknown keys for the round
trip) and the one shape of a record's error: a RecordError naming the field's path (``epochs[2].epoch_seconds``),
what it held and what to do, worded from pydantic's error and the field's type (bench.vocab.limits' constrained types).

A record read from outside (``model_validate``, ``model_validate_json``) keeps the keys it was read with and is
written back with them (``to_dict``: ``model_dump(mode="json", exclude_unset=True)``), so a record older than a field
does not gain today's default for it; one built in code (``Record(...)``) is written whole (a ``SPARSE`` record
without its None fields: a run's info holds what the run learned). JSON from outside is parsed by pydantic's own
parser, which refuses a lone surrogate and nesting deeper than 200; the error then names where in the document.

A leaf of the engine's vocabulary: it imports bench.vocab.errors and bench.vocab.limits only.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, JsonValue, TypeAdapter, ValidationError, model_validator
from pydantic_core import ErrorDetails
from typing_extensions import Self

from bench.vocab.errors import RecordError
from bench.vocab.limits import Words

EXPORT_HINT = "export a run with `python -m bench export ID --format json`"
NESTING_MAX = 200  # the depth pydantic's JSON parser allows: deeper is refused on import, so no export recurses past it


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def show_value(value: Any, limit: int = 60) -> str:
    """A short repr of an offending value for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fail(path: str, problem: str) -> RecordError:
    where = f"{path} " if path else ""
    return RecordError(f"{where}{problem}; fix the file or {EXPORT_HINT}")


class PathError(ValueError):
    """Raised inside a record's own rule (an epoch numbered twice): ``path`` below the record, and the problem."""

    def __init__(self, path: str, problem: str):
        super().__init__(f"{path} {problem}")
        self.path, self.problem = path, problem


class Problems(PathError):
    """Raised by a record's rule between its fields (a model_validator): every rule broken, each a whole sentence."""

    def __init__(self, items: list[str]):
        super().__init__("", "is inconsistent: " + "; ".join(items))
        self.items = list(items)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unpaired(value: Any, path: str) -> str | None:
    """The path below ``path`` of the first text (a key or a value) in ``value`` that is not valid Unicode; None."""
    if isinstance(value, str):
        return None if _encodes(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and not _encodes(key):
                return f"{path}[{key!r}]"
            found = _unpaired(item, f"{path}[{key!r}]")
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _unpaired(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _arguments(cls: Any, args: tuple[Any, ...], data: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record built in code: by name or the first ones in order, the keys this version does not
    declare under ``extra``; a SPARSE record's None left out where None is the default (a reading not taken)."""
    names = cls.model_fields
    if args:
        data = {**dict(zip(names, args)), **data}
    if isinstance(data.get("extra"), dict) and "extra" not in names:
        data = {**data.pop("extra"), **data}
    if cls.SPARSE:
        data = {k: v for k, v in data.items() if v is not None or k not in names or names[k].is_required()
                or names[k].get_default(call_default_factory=True) is not None}
    return data


def _whole(record: Any) -> Any:
    """A record built in code holds every field as given (``model_fields_set``), so it is written whole (a SPARSE
    record without its None fields); one read holds the keys it was read with."""
    unset = {k: getattr(record, k) for k in type(record).model_fields if k not in record.model_fields_set}
    if record.SPARSE:
        unset = {k: v for k, v in unset.items() if v is not None}
    return record.model_copy(update=unset) if unset else record


if TYPE_CHECKING:
    _Model = BaseModel
else:
    class _BuiltInCode(type(BaseModel)):
        """Where a record is built in code: a class's call (``GpuReading(...)``), which reading never makes
        (``model_validate`` and the records nested in what it reads are made by pydantic without it). A value out
        of its type raises the class's ``built_error`` (a RecordError naming the field)."""

        def __call__(cls, /, *args, **data):
            try:
                record = super().__call__(**_arguments(cls, args, data))
            except ValidationError as exc:
                raise cls.built_error(exc) from None
            return _whole(record)

    class _Model(BaseModel, metaclass=_BuiltInCode):
        """Record's base: pydantic's model, built in code through _BuiltInCode."""


_JSON: TypeAdapter[Any] = TypeAdapter(JsonValue)


class Record(_Model):
    """A record: frozen, its unknown keys kept (``extra``) and written back, its fields typed with bench.vocab.limits."""

    model_config = ConfigDict(frozen=True, extra="allow", protected_namespaces=(), revalidate_instances="never",
                              ser_json_inf_nan="null", populate_by_name=True)

    PATH: ClassVar[str] = ""  # where the record sits when read alone: "info", "summary", "sample"
    NOUN: ClassVar[str] = "JSON object"  # what a list of them is called in a message
    SPARSE: ClassVar[bool] = False  # built in code: written without its None fields

    @classmethod
    def built_error(cls, exc: ValidationError) -> Exception:
        """The error a record built in code with bad fields raises: a RecordError naming the first field's path."""
        return record_error(exc, cls, cls.PATH)

    @model_validator(mode="after")
    def _extra_is_json(self) -> Self:
        """The unknown keys kept beside a record are JSON, held to the one rule every text is: valid Unicode (a lone
        surrogate read from a Python dict, a store row, would else be written back and refused by every reader)."""
        for key, value in self.extra.items():
            try:
                _JSON.validate_python(value)
            except ValidationError:
                raise PathError(_key(key), f"must be JSON or null, got {show_value(value)}") from None
            where = _unpaired(value, f"[{key!r}]") if _encodes(key) else f"[{key!r}]"
            if where is not None:
                raise PathError(where, "must be valid Unicode text (it holds a lone surrogate)")
        return self

    @classmethod
    def model_validate(cls, obj: Any, path: str | None = None, **kwargs: Any) -> Self:  # type: ignore[override]
        """A record read from outside (a file's decoded JSON, a store row): RecordError naming the first problem's
        path (from ``path``, else the record's PATH)."""
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise record_error(exc, cls, cls.PATH if path is None else path) from None

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, path: str | None = None,  # type: ignore[override]
                            **kwargs: Any) -> Self:
        """A record read from JSON text with pydantic's parser (a lone surrogate, nesting past 200: refused)."""
        try:
            return super().model_validate_json(json_data, **kwargs)
        except ValidationError as exc:
            raise record_error(exc, cls, cls.PATH if path is None else path, json_data) from None

    def __eq__(self, other: object) -> bool:
        """Equal records hold the same fields and extra keys (what is kept beside one, a computed summary or the
        order its keys were read in, is not part of it)."""
        if not isinstance(other, BaseModel) or type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__ and self.model_extra == other.model_extra

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    @property
    def extra(self) -> dict[str, Any]:
        """The keys this version does not declare, as they were read: written back as they are."""
        return self.model_extra or {}

    def carries(self, key: str) -> bool:
        """Whether this record holds ``key`` at all, even as None (one read from a writer that never took a reading
        has no such key; one built in code holds every field)."""
        return key in self.model_fields_set

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form: what it was read with, or every field where built in code."""
        return self.model_dump(mode="json", exclude_unset=True)

    def updated(self, **fields: Any) -> Self:
        """A copy with ``fields`` set, each checked by its type (an unknown one kept among the extra keys)."""
        return type(self).model_validate({**self.model_dump(exclude_unset=True), **fields})


# -- the words of an error -------------------------------------------------------------------------------------------
def record_error(exc: ValidationError, root: type, prefix: str, text: str | bytes | bytearray | None = None, *,
                 skip: int = 0) -> RecordError:
    """The RecordError for pydantic's first error in reading ``root``: its path from ``prefix``, worded from the
    field's type (``skip``: leading parts of pydantic's location that are no place in the document, such as a
    union's tag). A JSON text that pydantic's parser refuses is looked into to say where (a lone surrogate, nesting
    past NESTING_MAX)."""
    error = exc.errors(include_url=False)[0]
    kind, loc = error["type"], error["loc"][skip:]
    if kind == "json_invalid" and text is not None:
        return json_error(text, prefix, error["msg"])
    cause = cause_of(error)
    path, spec = _walk(root, loc)
    where = _join(prefix, path)
    if isinstance(cause, PathError):
        return fail(_join(where, cause.path), cause.problem)
    return fail(where, _problem(kind, error, spec))


def problems(exc: ValidationError, root: type) -> list[str]:
    """Every problem of pydantic's ``exc`` in reading ``root``, each as '<field> <what is wrong, what is allowed>'
    (``epochs must be a whole number from 1 to 1,000, got 0``): the words of a record built in code from what a
    person entered (a form, the command line), with no file to fix."""
    found: list[str] = []
    for error in exc.errors(include_url=False):
        cause = cause_of(error)
        path, spec = _walk(root, error["loc"])
        where = path.removeprefix(".")
        if isinstance(cause, Problems):
            found.extend(cause.items)
        elif isinstance(cause, PathError):
            found.append(f"{_join(where, cause.path) or 'the ' + root.__name__} {cause.problem.strip()}")
        else:
            found.append(f"{where or 'the ' + root.__name__} {_problem(error['type'], error, spec)}")
    return found


def cause_of(error: ErrorDetails) -> Any:
    """The exception a validator raised behind one of pydantic's errors (a PathError, Problems), or None."""
    context = error["ctx"] if "ctx" in error else {}
    return context["error"] if "error" in context else None


def _join(prefix: str, path: str) -> str:
    if not prefix:
        return path.removeprefix(".")
    if not path:
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path.removeprefix('.')}"


class _Spec(typing.NamedTuple):
    base: Any  # the type without None and Annotated
    nullable: bool
    words: Words | None


def _unwrap(tp: Any, metadata: list[Any] | tuple[Any, ...] = ()) -> _Spec:
    # the last Words found: an Annotated around a constrained type (a setting's words around limits.Line) speaks last
    nullable, words = False, next((m for m in reversed(metadata) if isinstance(m, Words)), None)
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            words = words or next((m for m in reversed(tp.__metadata__) if isinstance(m, Words)), None)
            tp = typing.get_args(tp)[0]
        elif origin in (Union, types.UnionType) and type(None) in typing.get_args(tp):
            rest = [a for a in typing.get_args(tp) if a is not type(None)]
            nullable, tp = True, rest[0] if len(rest) == 1 else Union[tuple(rest)]
        else:
            return _Spec(tp, nullable, words)


def _walk(root: type, loc: tuple[int | str, ...]) -> tuple[str, _Spec]:
    """The path of ``loc`` as a record names it (``runs[0].epochs[2].epoch``) and the type found there."""
    spec, path = _Spec(root, False, None), ""
    for part in loc:
        tp = spec.base
        origin = typing.get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(str(part)) or next(
                (f for f in tp.model_fields.values() if _aliases(f, str(part))), None)
            path += _key(part)
            spec = _unwrap(field.annotation, field.metadata) if field is not None else _Spec(Any, True, None)
        elif isinstance(part, int) and origin in (tuple, list):
            path += f"[{part}]"
            spec = _unwrap(typing.get_args(tp)[0])
        elif origin is dict:
            path += _key(part)
            spec = _unwrap(typing.get_args(tp)[1])
        elif isinstance(part, int):
            path += f"[{part}]"
        elif tp is Any or tp is JsonValue or origin in (Union, types.UnionType) or part in ("list", "dict"):
            continue  # a union's branch, a JSON value's kind: not a place in the document
        else:
            path += _key(part)
    return path, spec


def _key(part: Any) -> str:
    """A key as a path names it: ``.name``, or ``['']`` for one that is empty or not printable text."""
    text = str(part)
    return f".{text}" if text and text.isprintable() else f"[{text!r}]"


def _aliases(field: Any, name: str) -> bool:
    choices = getattr(field.validation_alias, "choices", ())
    return name in choices


def _problem(kind: str, error: Any, spec: _Spec) -> str:
    got = f", got {show_value(error['input'])}"
    if kind == "missing":
        return "is missing"
    if kind == "string_unicode":
        return f"must be valid Unicode text (it holds a lone surrogate){got}"
    if kind in ("recursion_loop", "recursion_depth_exceeded"):
        return f"is nested too deeply (at most {NESTING_MAX} levels)"
    if kind == "too_short":
        return f"must be a non-empty {_what(spec.base).removeprefix('a ')}{got}"
    if kind == "string_too_long":
        return f"must be text of at most {_limit(error, 'max_length'):,} characters, got {len(error['input'] or ''):,}"
    constraint = kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number",
                          "string_pattern_mismatch")
    if spec.words is not None and (constraint or spec.words.always):
        return f"must be {spec.words.text}{got}"
    if constraint:
        return f"{error['msg'][0].lower()}{error['msg'][1:]}{got}"
    return f"must be {_what(spec.base)}{' or null' if spec.nullable else ''}{got}"


def _limit(error: ErrorDetails, name: str) -> int:
    """A bound pydantic names in an error's context (``max_length``), 0 where it names none."""
    context = error["ctx"] if "ctx" in error else {}
    return int(context[name]) if name in context else 0


_WORDS = {str: "text", int: "a whole number", float: "a number", bool: "true or false"}


def _what(tp: Any) -> str:
    """The words for a type in a message: 'a whole number', 'a list of samples', 'one of queued, running'."""
    spec = _unwrap(tp)
    tp, origin, args = spec.base, typing.get_origin(spec.base), typing.get_args(spec.base)
    if origin in (tuple, list):
        item = _unwrap(args[0]).base
        if isinstance(item, type) and issubclass(item, Record):
            return f"a list of {item.NOUN}s"
        return f"a list of {_what(item).removeprefix('a ')}"
    if origin is dict:
        return f"a JSON object of {_what(args[1]).removeprefix('a ')}"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(str(m.value) for m in tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "a JSON object"
    if origin in (Union, types.UnionType):
        return " or ".join(_what(a) for a in args)
    return _WORDS.get(tp, "JSON")


# -- where a JSON text goes wrong ------------------------------------------------------------------------------------
def json_error(text: str | bytes | bytearray, prefix: str, message: str) -> RecordError:
    """The RecordError for a JSON text pydantic's parser refused (``message``): where a lone surrogate or nesting past
    NESTING_MAX sits when Python's own parser can read the text, else where the text stops being JSON."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return RecordError(f"{prefix + ': ' if prefix else ''}not valid JSON ({message.removeprefix('Invalid JSON: ')});"
                           f" {EXPORT_HINT}")
    found = odd_place(data)
    if found is None:
        return RecordError(f"not valid JSON ({message}); {EXPORT_HINT}")
    path, problem = found
    return fail(_join(prefix, path), problem)


def odd_place(data: Any) -> tuple[str, str] | None:
    """(path, problem) of the first text in ``data`` that holds a lone surrogate, or of the first value nested past
    NESTING_MAX; None when neither (looked through without recursion, so any depth is safe)."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > NESTING_MAX:
            return path, f"is nested too deeply (at most {NESTING_MAX} levels)"
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return path, f"must be valid Unicode text (it holds a lone surrogate), got {show_value(value)}"
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return f"{path}{_key(key)}", "is a key that is not valid Unicode text (it holds a lone surrogate)"
                stack.append((item, f"{path}{_key(key)}", depth + 1))
        elif isinstance(value, list):
            for i in reversed(range(len(value))):
                stack.append((value[i], f"{path}[{i}]", depth + 1))
    return None
