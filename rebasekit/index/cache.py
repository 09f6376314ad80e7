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
its payload, and is used only when all three match. Anything else (random bytes, a
planted pickle, an old schema, a payload edited after the fact, a file too large) is a
miss and is rebuilt, never an error. Entries are written atomically (temp file +
rename), and a read-only cache only costs speed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rebasekit import datacodec
from rebasekit.index.models import FACTS_FORMAT, ModuleFacts

_MISS = object()
SCHEMA = 1  # bump when the entry layout (not a record) changes
MAX_ENTRY_BYTES = 256 * 1024 * 1024  # larger entries are not read: they cannot be ours
T = TypeVar("T")


class DataStore:
    """A folder of checked JSON entries, two-level fan-out by key; ``directory=None`` stores nothing.

    File layout: one header line ``{"schema", "key", "sha256"}`` then the JSON payload.
    """

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}.json"

    def load(self, key: str, default: Any = None) -> Any:
        if self.directory is None:
            return default
        try:
            return _read_entry(self.path(key), key)
        except (OSError, ValueError, TypeError, KeyError, RecursionError, MemoryError):
            return default  # corrupt, foreign or tampered with: recomputed by the caller

    def save(self, key: str, value: Any) -> None:
        if self.directory is None:
            return
        try:
            payload = datacodec.dumps(value).encode()
        except (TypeError, ValueError, RecursionError):
            return  # not storable: kept in memory only
        header = json.dumps(
            {"schema": SCHEMA, "key": key, "sha256": hashlib.sha256(payload).hexdigest()}
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


def _read_entry(path: Path, key: str) -> Any:
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
    return datacodec.loads(payload)


def facts_key(relpath: str, content: bytes) -> str:
    return hashlib.sha256(relpath.encode() + b"\0" + content).hexdigest()


class FactsCache:
    """Parsed facts per file; ``None`` directory disables caching (pure in-memory)."""

    def __init__(self, directory: Path | None) -> None:
        self.root = directory
        self.directory = directory / f"facts-v{FACTS_FORMAT}" if directory is not None else None
        self._store = DataStore(self.directory)

    def get(self, key: str) -> ModuleFacts | None:
        facts = self._store.load(key)
        return facts if isinstance(facts, ModuleFacts) else None

    def put(self, key: str, facts: ModuleFacts) -> None:
        self._store.save(key, facts)

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
        value = store.load(key, _MISS)
        if value is _MISS:
            value = func(index, *args)
            store.save(key, value)
        memo[mem_key] = value
        return value

    return wrapper
