"""Data-only JSON encoding of rebasekit's cached records: nothing in it can run code.

The caches used to be pickles, and unpickling a planted file runs whatever it says.
Here a cached value is JSON, and the only classes it can come back as are the plain
records marked with :func:`record` (dataclasses and enums of rebasekit itself): a name
outside that list, a missing field or a wrong shape is a :class:`DecodeError`, which
the cache treats as a miss.

Shapes: JSON scalars and lists stand for themselves; ``{"t": [...]}`` is a tuple,
``{"d": [[key, value], ...]}`` a dict with string keys, ``{"m": [[k, v], ...]}`` any other
dict, ``{"e": NAME, "v": value}`` an enum member and ``{"c": NAME, "f": [[field, value],
...]}`` a record. Every JSON object is such a tag, so :func:`loads` decodes bottom-up in
``json``'s own ``object_hook`` (one pass, no second walk over the data).
"""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any, TypeVar

T = TypeVar("T", bound=type)

_RECORDS: dict[str, type] = {}
_FIELDS: dict[type, frozenset[str]] = {}  # each dataclass record's field names, for decoding


class DecodeError(ValueError):
    """The data is not an encoding of known records (corrupt, foreign or tampered with)."""


def record(cls: T) -> T:
    """Allow ``cls`` (a dataclass or an enum) to be stored in and read back from a cache."""
    if not (dataclasses.is_dataclass(cls) or issubclass(cls, enum.Enum)):
        raise TypeError(f"{cls.__qualname__} is neither a dataclass nor an enum")
    _RECORDS[_name(cls)] = cls
    if dataclasses.is_dataclass(cls):
        _FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return cls


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data; raises ``TypeError`` for anything not allowed."""
    if (
        value is None
        or isinstance(value, (bool, int, float, str))
        and not isinstance(value, enum.Enum)
    ):
        return value
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"t": [encode(v) for v in value]}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {"d": [[k, encode(v)] for k, v in value.items()]}
        return {"m": [[encode(k), encode(v)] for k, v in value.items()]}
    cls = type(value)
    if _RECORDS.get(_name(cls)) is not cls:
        raise TypeError(f"{cls.__qualname__} is not a cacheable record (mark it with @record)")
    if isinstance(value, enum.Enum):
        return {"e": _name(cls), "v": value.value}
    return {
        "c": _name(cls),
        "f": [[f.name, encode(getattr(value, f.name))] for f in dataclasses.fields(value)],
    }


def dumps(value: Any) -> str:
    """``value`` as JSON text (see module docstring); raises ``TypeError`` if not storable."""
    return json.dumps(encode(value), separators=(",", ":"))


def loads(text: str | bytes) -> Any:
    """The value :func:`dumps` wrote; raises :class:`DecodeError` (a ``ValueError``) otherwise."""
    try:
        return json.loads(text, object_hook=_decode_object)
    except RecursionError:
        raise DecodeError("cached data nested too deeply") from None


def _pairs(value: Any) -> dict:
    try:
        return dict(_expect(value, list))
    except (TypeError, ValueError) as exc:  # not pairs, or an unhashable key
        raise DecodeError(f"bad mapping in cached data: {exc}") from None


def _decode_object(obj: dict) -> Any:
    if len(obj) == 1:
        if "t" in obj:
            return tuple(_expect(obj["t"], list))
        if "d" in obj:
            out = _pairs(obj["d"])
            if not all(isinstance(k, str) for k in out):
                raise DecodeError("a string-keyed dict in cached data has other keys")
            return out
        if "m" in obj:
            return _pairs(obj["m"])
    elif len(obj) == 2:
        if "e" in obj and "v" in obj:
            cls = _record(obj["e"])
            try:
                return cls(obj["v"])
            except (ValueError, TypeError) as exc:
                raise DecodeError(str(exc)) from None
        if "c" in obj and "f" in obj:
            cls = _record(obj["c"])
            fields = _pairs(obj["f"])
            if _FIELDS.get(cls) != fields.keys():
                raise DecodeError(f"fields of cached {obj['c']} do not match the record")
            try:
                return cls(**fields)
            except (TypeError, ValueError) as exc:
                raise DecodeError(str(exc)) from None
    raise DecodeError("unknown shape in cached data")


def _expect(value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise DecodeError(f"expected {kind.__name__} in cached data, got {type(value).__name__}")
    return value


def _record(name: Any) -> type:
    cls = _RECORDS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise DecodeError(f"cached data names an unknown record {name!r}")
    return cls
