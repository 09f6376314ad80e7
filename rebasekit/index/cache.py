"""On-disk caches: checked JSON entries, parsed-module facts and tree-derived results.

Three caches share one storage primitive (:class:`DataStore`):

* :class:`FactsCache` keeps parsed :class:`ModuleFacts` keyed by path + content hash, so
  a file unchanged between two releases is parsed once for both.
* :func:`tree_memo` keeps the results of whole-tree searches (the top-level name table,
  parallel-implementation twins) keyed by the tree's content fingerprint, the source of
  the function computing them and its arguments. Those searches read or parse hundreds
  of files; on a warm cache they cost one small file load.

A cache folder may be shared between CI jobs or restored from elsewhere, so nothing
read from it is trusted: an entry is data only (JSON through :mod:`rebasekit.datacodec`,
never pickle), carries a schema version, the key it was stored under and the SHA-256 of
its payload, and is used only when all three match. An entry whose value has a declared
type (module facts, the results of annotated tree searches) is stored as plain JSON and
decoded by a typed ``msgspec`` decoder, which builds only that type and checks every
field on the way (several times faster than :mod:`rebasekit.datacodec`'s tagged form,
which stays for values of no declared type). Anything else (random bytes, a
planted pickle, an old schema, a payload edited after the fact, a file too large) is a
miss and is rebuilt, never an error. Entries are written atomically (temp file +
rename), and a read-only cache only costs speed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from rebasekit import datacodec
from rebasekit.index.models import FACTS_FORMAT, ModuleFacts

_MISS = object()
SCHEMA = 1  # bump when the entry layout (not a record) changes
MAX_ENTRY_BYTES = 256 * 1024 * 1024  # larger entries are not read: they cannot be ours
T = TypeVar("T")


_TAGGED, _TYPED = "tagged", "typed"  # the header's "codec": datacodec's tags, or plain typed JSON


@functools.lru_cache(maxsize=64)
def _typed(kind: Any) -> tuple[msgspec.json.Decoder, str]:
    """``kind``'s decoder and the digest of its layout (every field, type and default).

    The layout goes into the entry's header: msgspec fills a field missing from the
    JSON with its default, so an entry written before a record gained a field must not
    be read as if it had been written after. Raises ``TypeError`` for a type msgspec
    cannot decode.
    """
    schema = json.dumps(msgspec.json.schema(kind), sort_keys=True)
    return msgspec.json.Decoder(kind), hashlib.sha256(schema.encode()).hexdigest()[:16]


def typed_payload(value: Any, kind: Any) -> bytes | None:
    """``value`` as plain JSON that ``kind``'s decoder reads back equal, else None.

    The check is a decode of what was just encoded: a value that does not fit ``kind``
    exactly (a list where a tuple is declared, a subclass, a key JSON cannot spell)
    gets None and is stored in the tagged form instead.
    """
    try:
        payload = msgspec.json.encode(value)
        return payload if _typed(kind)[0].decode(payload) == value else None
    except (TypeError, ValueError, msgspec.MsgspecError, RecursionError):
        return None


class DataStore:
    """A folder of checked JSON entries, two-level fan-out by key; ``directory=None`` stores nothing.

    File layout: one header line ``{"schema", "key", "sha256", "codec"}`` then the JSON
    payload. ``kind`` (a type msgspec can decode, e.g. a dataclass) selects the typed
    codec for a value that round-trips through it; anything else is tagged.
    """

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}.json"

    def load(self, key: str, default: Any = None, *, kind: Any = None) -> Any:
        if self.directory is None:
            return default
        try:  # the path as a string: a warm scan reads about 650 entries
            return _read_entry(os.path.join(self.directory, key[:2], f"{key}.json"), key, kind)
        except (
            OSError,
            ValueError,
            TypeError,
            KeyError,
            RecursionError,
            MemoryError,
            msgspec.MsgspecError,
        ):
            return default  # corrupt, foreign or tampered with: recomputed by the caller

    def save(self, key: str, value: Any, *, kind: Any = None) -> None:
        if self.directory is None:
            return
        payload = typed_payload(value, kind) if kind is not None else None
        codec = _TYPED
        if payload is None:
            codec = _TAGGED
            try:
                payload = datacodec.dumps(value).encode()
            except (TypeError, ValueError, RecursionError):
                return  # not storable: kept in memory only
        header = json.dumps(
            {
                "schema": SCHEMA,
                "key": key,
                "sha256": hashlib.sha256(payload).hexdigest(),
                "codec": codec,
                **({"layout": _typed(kind)[1]} if codec == _TYPED else {}),
            }
        )
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(header.encode() + b"\n" + payload)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass  # a read-only or full cache only costs speed


def _read_entry(path: str | Path, key: str, kind: Any) -> Any:
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size > MAX_ENTRY_BYTES:
            raise ValueError("cache entry too large")
        blob = fh.read(MAX_ENTRY_BYTES + 1)
    head, sep, payload = blob.partition(b"\n")
    header = json.loads(head) if sep else None
    if not isinstance(header, dict) or header.get("schema") != SCHEMA or header.get("key") != key:
        raise ValueError("not an entry of this cache for this key")
    if header.get("sha256") != hashlib.sha256(payload).hexdigest():
        raise ValueError("cache entry payload does not match its hash")
    codec = header.get("codec", _TAGGED)
    if codec == _TYPED and kind is not None:
        decoder, layout = _typed(kind)
        if header.get("layout") != layout:
            raise ValueError("cache entry written for another layout of its type")
        return decoder.decode(payload)
    if codec == _TAGGED:
        return datacodec.loads(payload)
    raise ValueError("cache entry in a codec this reader cannot use")


def facts_key(relpath: str, content: bytes) -> str:
    return hashlib.sha256(relpath.encode() + b"\0" + content).hexdigest()


class FactsCache:
    """Parsed facts per file; ``None`` directory disables caching (pure in-memory)."""

    def __init__(self, directory: Path | None) -> None:
        self.root = directory
        self.directory = directory / f"facts-v{FACTS_FORMAT}" if directory is not None else None
        self._store = DataStore(self.directory)

    def get(self, key: str) -> ModuleFacts | None:
        facts = self._store.load(key, kind=ModuleFacts)
        return facts if isinstance(facts, ModuleFacts) else None

    def put(self, key: str, facts: ModuleFacts) -> None:
        self._store.save(key, facts, kind=ModuleFacts)

    def derived(self) -> DataStore:
        """The store for tree-derived results (next to the facts, same on/off switch)."""
        return DataStore(self.root / "derived" if self.root is not None else None)


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """Digest of rebasekit's own sources: any change to an algorithm invalidates derived results.

    Hashing the whole package (about 100 small files, a few ms) is cheaper than tracking
    which helper modules a memoised search really depends on, and never stale.
    """
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def tree_memo(func: Callable[..., T]) -> Callable[..., T]:
    """Memoise ``func(index, *args)`` in memory and on disk, keyed by the tree's content.

    ``args`` must have a stable ``repr`` (strings, numbers, tuples of them). The result
    must be encodable by :mod:`rebasekit.datacodec` and depend only on the tree: anything else belongs in the key.
    Trees without a fingerprint (none is cheap to compute) are memoised in memory only.
    The return annotation, when it resolves to a type msgspec can decode, is the typed
    codec of the stored result (see :class:`DataStore`).
    """

    @functools.wraps(func)
    def wrapper(index: Any, *args: Any) -> T:
        memo: dict = index.__dict__.setdefault("_tree_memo", {})
        mem_key = (func.__qualname__, args)
        if mem_key in memo:
            return memo[mem_key]
        fingerprint = index.tree.fingerprint
        store = index.cache.derived() if fingerprint else DataStore(None)
        key = hashlib.sha256(
            repr(
                (
                    fingerprint,
                    index.tree.package,
                    func.__module__,
                    func.__qualname__,
                    code_digest(),
                    args,
                )
            ).encode()
        ).hexdigest()
        kind = _return_kind(func)
        value = store.load(key, _MISS, kind=kind)
        if value is _MISS:
            value = func(index, *args)
            store.save(key, value, kind=kind)
        memo[mem_key] = value
        return value

    return wrapper


@functools.cache
def _return_kind(func: Callable[..., Any]) -> Any:
    """``func``'s return annotation if msgspec can decode it, else None (tagged entries)."""
    try:
        kind = typing.get_type_hints(func).get("return")
        if kind is None:
            return None
        _typed(kind)
    except (NameError, TypeError, AttributeError, ValueError):
        return None
    return kind


def content_memo(
    store: DataStore, name: str, parts: tuple, compute: Callable[[], T], kind: Any = None
) -> T:
    """``compute()`` memoised in ``store`` under everything it is a function of.

    ``parts`` must determine the result completely (texts, not paths: a file's text is
    its own key) and have a stable ``repr``; ``name`` tells computations apart and the
    digest of rebasekit's sources and the interpreter's minor version (its parser) are
    added, so a changed algorithm or grammar misses. ``kind`` is the result's type for
    the typed codec (see :class:`DataStore`).
    """
    digest = hashlib.sha256()
    _feed(digest, (name, code_digest(), sys.version_info[:2], parts))
    key = digest.hexdigest()
    value = store.load(key, _MISS, kind=kind)
    if value is _MISS:
        value = compute()
        store.save(key, value, kind=kind)
    return value


def _feed(digest: Any, value: Any) -> None:
    """Add ``value`` to ``digest`` so that different values never feed the same bytes.

    Each value is a type tag, a length and its content: texts as their UTF-8 bytes (the
    keys hold whole files; their ``repr`` cost a warm scan more than the lookups),
    tuples and lists item by item, anything else as its ``repr``.
    """
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        digest.update(b"s%d:" % len(data))
        digest.update(data)
    elif isinstance(value, (tuple, list)):
        digest.update(b"%s%d:" % (b"t" if isinstance(value, tuple) else b"l", len(value)))
        for item in value:
            _feed(digest, item)
    else:
        data = repr(value).encode("utf-8", "surrogatepass")
        digest.update(b"r%s:%d:" % (type(value).__name__.encode(), len(data)))
        digest.update(data)
