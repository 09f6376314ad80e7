"""Data-only JSON encoding of rebasekit's cached records: nothing in it can run code.

The caches used to be pickles, and unpickling a planted file runs whatever it says.
Here a cached value is JSON, and the only classes it can come back as are the plain
records marked with :func:`record` (dataclasses and enums of rebasekit itself): a name
outside that list, a missing field or a wrong shape is a :class:`DecodeError`, which
the cache treats as a miss.

Shapes: JSON scalars and lists stand for themselves; ``{"t": [...]}`` is a tuple,
``{"d": {...}}`` a dict with string keys, ``{"m": [[k, v], ...]}`` any other dict,
``{"e": NAME, "v": value}`` an enum member and ``{"c": NAME, "f": {...}}`` a record.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, TypeVar

T = TypeVar("T", bound=type)

_RECORDS: dict[str, type] = {}


class DecodeError(ValueError):
    """The data is not an encoding of known records (corrupt, foreign or tampered with)."""


def record(cls: T) -> T:
    """Allow ``cls`` (a dataclass or an enum) to be stored in and read back from a cache."""
    if not (dataclasses.is_dataclass(cls) or issubclass(cls, enum.Enum)):
        raise TypeError(f"{cls.__qualname__} is neither a dataclass nor an enum")
    _RECORDS[_name(cls)] = cls
    return cls


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data; raises ``TypeError`` for anything not allowed."""
    if value is None or isinstance(value, (bool, int, float, str)) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"t": [encode(v) for v in value]}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {"d": {k: encode(v) for k, v in value.items()}}
        return {"m": [[encode(k), encode(v)] for k, v in value.items()]}
    cls = type(value)
    if _RECORDS.get(_name(cls)) is not cls:
        raise TypeError(f"{cls.__qualname__} is not a cacheable record (mark it with @record)")
    if isinstance(value, enum.Enum):
        return {"e": _name(cls), "v": value.value}
    return {"c": _name(cls), "f": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}


def decode(data: Any) -> Any:
    """The value :func:`encode` turned into ``data``; raises :class:`DecodeError` otherwise."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise DecodeError(f"unexpected {type(data).__name__} in cached data")
    if "t" in data and len(data) == 1:
        return tuple(decode(v) for v in _expect(data["t"], list))
    if "d" in data and len(data) == 1:
        return {k: decode(v) for k, v in _expect(data["d"], dict).items()}
    if "m" in data and len(data) == 1:
        pairs = _expect(data["m"], list)
        try:
            return {decode(k): decode(v) for k, v in pairs}
        except (TypeError, ValueError) as exc:  # not a pair, or an unhashable key
            raise DecodeError(f"bad mapping in cached data: {exc}") from None
    if "e" in data and "v" in data:
        cls = _record(data["e"])
        try:
            return cls(data["v"])
        except (ValueError, TypeError) as exc:
            raise DecodeError(str(exc)) from None
    if "c" in data and "f" in data:
        cls = _record(data["c"])
        fields = {k: decode(v) for k, v in _expect(data["f"], dict).items()}
        if not dataclasses.is_dataclass(cls) or set(fields) != {f.name for f in dataclasses.fields(cls)}:
            raise DecodeError(f"fields of cached {data['c']} do not match the record")
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
