"""Records declared once, as frozen dataclasses: this module reads one from JSON (``checked`` for what comes from
outside, ``trusted`` for what this project wrote), writes it back (``dump``) and publishes its JSON Schema
(``json_schema``), all from the same declaration, so the three can never disagree.

A declared record is a frozen dataclass marked with :func:`record` whose fields are its JSON keys, typed with: ``str``, ``int``, ``float``,
``bool``, ``X | None``, ``tuple[X, ...]`` (a JSON list), ``dict[str, X]`` (a JSON object of one value type),
``Literal["a", "b"]`` and another declared record. Two field names are conventions: ``extra`` holds the keys this
version does not know, kept for the round trip; ``keys`` (when declared) remembers the keys a record was read with,
so it is written back as it came. A number is held to ``bench.limits.BOUNDS`` by its field's name (any finite number
SQLite can hold where unlisted). A field without a default is required. Every problem is a RecordError naming the
field's path (``info.cluster.index``) and what it held.

Records older than this module (the readings, the summary) keep their own hand-written ``from_dict``/``of``/
``to_dict``; a declared record may hold one (its ``from_dict(value, path)``, ``of(value)`` and ``to_dict()`` are used)
and its schema is then an open object. A leaf of the engine: it imports bench.limits and bench.checks only.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar, Union

from bench import limits
from bench.errors import RecordError
from bench.checks import fail, is_int, is_number, show_value

T = TypeVar("T")

# a JSON value, for the keys a later version added (``extra``): what the round trip keeps, typed as what it is
JsonValue = Union[None, bool, int, float, str, list["JsonValue"], dict[str, "JsonValue"]]

_CONVENTIONS = ("extra", "keys")
_WORDS = {str: "text", int: "a whole number", float: "a number", bool: "true or false"}


_MARK = "__bench_typed__"


R = TypeVar("R", bound="Record")


class Record:
    """What a declared record is read and written with, from its declaration alone: ``from_dict`` (checked, errors
    named from ``PATH`` unless a path is given), ``of`` (trusted; None reads as an empty record) and ``to_dict``. A
    record with its own rule (a renamed key, a rule across fields) writes its own methods instead."""

    PATH: ClassVar[str] = ""  # where the record sits when read alone: "info", "summary", "machine"

    @classmethod
    def from_dict(cls: type[R], data: Any, path: str | None = None) -> R:
        return checked(cls, data, cls.PATH if path is None else path)

    @classmethod
    def of(cls: type[R], data: Mapping[str, Any] | None) -> R:
        return trusted(cls, data or {})

    def to_dict(self) -> dict[str, Any]:
        return dump(self)


_SPARSE = "__bench_typed_sparse__"


@typing.overload
def record(cls: type[T]) -> type[T]: ...
@typing.overload
def record(*, sparse: bool = False) -> Callable[[type[T]], type[T]]: ...


def record(cls: Any = None, *, sparse: bool = False) -> Any:
    """Mark a frozen dataclass as declared here: read, written and described by this module from its fields.
    ``sparse``: a record built in code (not read) is written without its None fields (a run's info holds what the run
    learned, nothing else); one read keeps the keys it was read with either way."""
    def mark(c: type[T]) -> type[T]:
        setattr(c, _MARK, True)
        setattr(c, _SPARSE, sparse)
        return c
    return mark(cls) if cls is not None else mark


def _declared(cls: Any) -> bool:
    return isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__dict__.get(_MARK, False)


def _legacy(cls: Any) -> bool:
    return isinstance(cls, type) and dataclasses.is_dataclass(cls) and hasattr(cls, "from_dict") and not _declared(cls)


_FIELDS: dict[type, tuple[tuple[str, Any, bool], ...]] = {}
_BOUNDS: dict[type, dict[str, str]] = {}


def bound(name: str, **kwargs: Any) -> Any:
    """A field whose numbers (or a map's values) are held to ``bench.limits.BOUNDS[name]`` rather than to its own
    name's: ``steady_epoch_seconds: float | None = typed.bound("epoch_seconds", default=None)``."""
    return dataclasses.field(metadata={"bound": name}, **kwargs)


def _fields(cls: Any) -> tuple[tuple[str, Any, bool], ...]:
    """(name, type, required) of each JSON field of ``cls``, the conventions left out (read once per class)."""
    if cls not in _FIELDS:
        hints = typing.get_type_hints(cls)
        fields = [f for f in dataclasses.fields(cls) if f.name not in _CONVENTIONS]
        _FIELDS[cls] = tuple((f.name, hints[f.name],
                              f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                             for f in fields)
        _BOUNDS[cls] = {f.name: f.metadata.get("bound", f.name) for f in fields}
    return _FIELDS[cls]


def _defaulted(cls: Any) -> frozenset[str]:
    """The fields that have a default: a null read where one of them allows none takes the default instead."""
    return frozenset(f.name for f in dataclasses.fields(cls)
                     if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)


def _has(cls: type, name: str) -> bool:
    return any(f.name == name for f in dataclasses.fields(cls))


def _optional(tp: Any) -> tuple[bool, Any]:
    """(whether None is allowed, the type without None)."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) < len(typing.get_args(tp)):
            return True, args[0] if len(args) == 1 else Union[tuple(args)]
    return False, tp


def _what(tp: Any) -> str:
    """The words for a type in a message: 'a whole number', 'a list of text', 'one of "a", "b"'."""
    nullable, tp = _optional(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is tuple and isinstance(args[0], type) and dataclasses.is_dataclass(args[0]):
        text = f"a list of {getattr(args[0], 'NOUN', 'JSON object')}s"
    elif origin is tuple:
        text = f"a list of {_what(args[0]).removeprefix('a ')}"
    elif origin is dict:
        text = f"a JSON object of {_what(args[1]).removeprefix('a ')}"
    elif origin is typing.Literal:
        text = "one of " + ", ".join(repr(a) for a in args)
    elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
        text = "a JSON object"
    else:
        text = _WORDS.get(tp, str(tp))
    return f"{text} or null" if nullable else text


Reader = Callable[[Any, str], Any]
_READERS: dict[tuple[Any, str, bool], Reader] = {}


def _same(value: Any, path: str) -> Any:
    return value


def _reader(tp: Any, name: str, check: bool) -> Reader:
    """The function that reads a value of ``tp`` (its numbers bounded as ``name``), checked or trusted; built once
    per type, so that reading a run's thousands of samples costs what a hand-written reader did."""
    key = (tp, name, check)
    if key not in _READERS:
        _READERS[key] = _build_reader(tp, name, check)
    return _READERS[key]


def _build_reader(tp: Any, name: str, check: bool) -> Reader:
    if tp is JsonValue or tp is Any:  # any JSON (a later version's key, a free-form map): kept as it is
        return _same
    nullable, inner = _optional(tp)
    read = _inner_reader(inner, name, check, " or null" if nullable else "")
    if not check:
        return read if read is not _same else _same
    what = _what(inner)

    def read_checked(value: Any, path: str) -> Any:
        if value is None:
            if nullable:
                return None
            raise fail(path, f"must be {what}, got null")
        return read(value, path)
    return read_checked


def _inner_reader(tp: Any, name: str, check: bool, or_null: str = "") -> Reader:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    what = _what(tp) + or_null
    if origin is tuple:
        item = _reader(args[0], name, check)
        if not check:
            if item is _same:
                return lambda value, path: None if value is None else tuple(value)
            return lambda value, path: None if value is None else tuple(item(v, path) for v in value)

        def read_list(value: Any, path: str) -> Any:
            if not isinstance(value, (list, tuple)):
                raise fail(path, f"must be {what}, got {show_value(value)}")
            return tuple(item(v, f"{path}[{i}]") for i, v in enumerate(value))
        return read_list
    if origin is dict:
        item = _reader(args[1], name, check)
        if not check:
            if item is _same:
                return lambda value, path: None if value is None else dict(value)
            return lambda value, path: None if value is None else {k: item(v, path) for k, v in value.items()}

        def read_map(value: Any, path: str) -> Any:
            if not isinstance(value, Mapping):
                raise fail(path, f"must be {what}, got {show_value(value)}")
            return {str(k): item(v, f"{path}.{k}") for k, v in value.items()}
        return read_map
    if origin is typing.Literal:
        if not check:
            return _same

        def read_word(value: Any, path: str) -> Any:
            if value not in args:
                raise fail(path, f"must be {what}, got {show_value(value)}")
            return value
        return read_word
    if origin in (Union, types.UnionType):  # e.g. float | str: the first alternative that reads it
        if not check:
            return _same
        arms = [_reader(a, name, True) for a in args]

        def read_either(value: Any, path: str) -> Any:
            for arm in arms:
                try:
                    return arm(value, path)
                except RecordError:
                    continue
            raise fail(path, f"must be {what}, got {show_value(value)}")
        return read_either
    if isinstance(tp, type) and issubclass(tp, enum.Enum):  # a str enum (a run's status): one of its values
        values = tuple(m.value for m in tp)
        if not check:
            return lambda value, path: tp(value)

        def read_member(value: Any, path: str) -> Any:
            if value not in values:
                raise fail(path, f"must be one of {', '.join(map(str, values))}, got {show_value(value)}")
            return tp(value)
        return read_member
    if _declared(tp) and "from_dict" not in tp.__dict__:
        if check:
            return lambda value, path: checked(tp, value, path)
        return lambda value, path: None if value is None else trusted(tp, value)
    if _declared(tp) or _legacy(tp):  # a record with its own reading (a renamed key, a rule across fields)
        if check:
            return lambda value, path: tp.from_dict(value, path)
        return lambda value, path: None if value is None else tp.of(value)
    if not check:
        return _same
    return _scalar_reader(tp, name, or_null)


def _scalar_reader(tp: Any, name: str, or_null: str) -> Reader:
    is_kind = {str: lambda v: isinstance(v, str), bool: lambda v: isinstance(v, bool), int: is_int,
               float: is_number}.get(tp)
    if tp is Any or tp is JsonValue:
        return _same
    if is_kind is None:  # a type this module does not declare: a programming error, not a record's
        raise TypeError(f"bench.typed cannot read {tp!r} (field {name})")
    what, numeric = _what(tp) + or_null, tp in (int, float)

    def read_scalar(value: Any, path: str) -> Any:
        if not is_kind(value):
            raise fail(path, f"must be {what}, got {show_value(value)}")
        if numeric and (wrong := limits.problem(value, name)) is not None:
            raise fail(path, wrong)
        return value
    return read_scalar


_PLANS: dict[tuple[type, bool], tuple[tuple[str, Reader, bool, bool], ...]] = {}


def _plan(cls: Any, check: bool) -> tuple[tuple[str, Reader, bool, bool], ...]:
    """(name, reader, required, null takes the default) of each field of ``cls``, built once."""
    key = (cls, check)
    if key not in _PLANS:
        defaulted = _defaulted(cls)
        bounds = (_fields(cls), _BOUNDS[cls])[1]
        _PLANS[key] = tuple((name, _reader(tp, bounds[name], check), required,
                             name in defaulted and not _optional(tp)[0]) for name, tp, required in _fields(cls))
    return _PLANS[key]


def checked(cls: type[T], data: Any, path: str) -> T:
    """A record read from outside: every field's type and bounds checked, unknown keys kept in ``extra``.

    Raises:
        RecordError: the first problem, naming its path (``path.field``) and what it held.
    """
    if not isinstance(data, Mapping):
        raise fail(path, f"must be a JSON object, got {show_value(data)}")
    values: dict[str, Any] = {}
    for name, read, required, null_is_default in _plan(cls, True):
        where = f"{path}.{name}" if path else name
        if name in data:
            if data[name] is None and null_is_default:  # null where a default stands: the default
                continue
            values[name] = read(data[name], where)
        elif required:
            raise fail(where, "is missing")
    return _build(cls, data, values)


def trusted(cls: type[T], data: Mapping[str, Any]) -> T:
    """A record this project wrote (its store, its worker's events), typed without the checks of ``checked``."""
    values: dict[str, Any] = {}
    for name, read, _, null_is_default in _plan(cls, False):
        if name in data:
            value = data[name]
            if value is None and null_is_default:
                continue
            values[name] = read(value, name)
    return _build(cls, data, values)


_SHAPES: dict[type, tuple[frozenset[str], bool, bool]] = {}


def _build(cls: type[T], data: Mapping[str, Any], values: dict[str, Any]) -> T:
    if cls not in _SHAPES:
        _SHAPES[cls] = (frozenset(name for name, _, _ in _fields(cls)), _has(cls, "extra"), _has(cls, "keys"))
    known, has_extra, has_keys = _SHAPES[cls]
    if has_extra:
        values["extra"] = {k: v for k, v in data.items() if k not in known}
    if has_keys:
        values["keys"] = tuple(data)
    return cls(**values)


Writer = Callable[[Any], Any]
_WRITERS: dict[type, tuple[tuple[str, Writer], ...]] = {}


def _writer(tp: Any) -> Writer:
    """The function that writes a value of ``tp`` as JSON (a tuple as a list, a record as its ``to_dict``)."""
    _, tp = _optional(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is tuple:
        item = _writer(args[0])
        if item is _same_json:
            return lambda v: None if v is None else list(v)
        return lambda v: None if v is None else [item(x) for x in v]
    if origin is dict:
        item = _writer(args[1])
        if item is _same_json:
            return lambda v: None if v is None else dict(v)
        return lambda v: None if v is None else {k: item(x) for k, x in v.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return lambda v: None if v is None else (v.to_dict() if hasattr(v, "to_dict") else dump(v))
    return _same_json


def _same_json(value: Any) -> Any:
    return value


def dump(record: Any) -> dict[str, Any]:
    """A declared record's JSON form: its fields, then the keys it kept; written with the keys it was read with."""
    cls = type(record)
    if cls not in _WRITERS:
        _WRITERS[cls] = tuple((name, _writer(tp)) for name, tp, _ in _fields(cls))
    out = {name: write(getattr(record, name)) for name, write in _WRITERS[cls]}
    extra = getattr(record, "extra", None)
    if extra:
        out.update(extra)
    keys = getattr(record, "keys", None)
    if keys is not None:
        return {k: out[k] for k in keys if k in out}
    if cls.__dict__.get(_SPARSE, False):
        return {k: v for k, v in out.items() if v is not None}
    return out


def json_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a declared record: what ``checked`` accepts, types and required keys, each
    declared record it holds once under ``$defs`` (bounds are the checker's: a schema cannot say 'finite')."""
    defs: dict[str, Any] = {}
    root = _object_schema(cls, defs)
    return {**root, "$defs": defs} if defs else root


def _object_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    fields = _fields(cls)
    out: dict[str, Any] = {"type": "object", "properties": {name: _schema_of(tp, defs) for name, tp, _ in fields},
                           "additionalProperties": _has(cls, "extra")}
    required = [name for name, _, req in fields if req]
    if required:
        out["required"] = required
    if cls.__doc__:
        out["description"] = " ".join(cls.__doc__.split())
    return out


def _schema_of(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if tp is JsonValue or tp is Any:
        return {}
    nullable, tp = _optional(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is tuple:
        out: dict[str, Any] = {"type": "array", "items": _schema_of(args[0], defs)}
    elif origin is dict:
        out = {"type": "object", "additionalProperties": _schema_of(args[1], defs)}
    elif origin is typing.Literal:
        out = {"enum": list(args)}
    elif origin in (Union, types.UnionType):
        out = {"anyOf": [_schema_of(a, defs) for a in args]}
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        out = {"enum": [m.value for m in tp]}
    elif _declared(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # placed first: a record that holds its own kind (a run's members) refers to it
            defs[tp.__name__] = _object_schema(tp, defs)
        out = {"$ref": f"#/$defs/{tp.__name__}"}
    elif _legacy(tp):
        out = tp.json_schema() if hasattr(tp, "json_schema") else {"type": "object"}
    else:
        out = {str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"},
               bool: {"type": "boolean"}}.get(tp, {})
    if nullable:
        return {"anyOf": [out, {"type": "null"}]}
    return out
