"""On-disk caches: atomic pickle files, parsed-module facts and tree-derived results.

Three caches share one storage primitive (:class:`PickleStore`):

* :class:`FactsCache` keeps parsed :class:`ModuleFacts` keyed by path + content hash, so
  a file unchanged between two releases is parsed once for both.
* :func:`tree_memo` keeps the results of whole-tree searches (the top-level name table,
  parallel-implementation twins) keyed by the tree's content fingerprint, the source of
  the function computing them and its arguments. Those searches read or parse hundreds
  of files; on a warm cache they cost one small pickle load.

Entries are written atomically (temp file + rename); an unreadable entry is a miss and
is overwritten, never an error, and a read-only cache only costs speed.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rebasekit.index.models import FACTS_FORMAT, ModuleFacts

_MISS = object()
_LOAD_ERRORS = (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError,
                ValueError, IndexError)
T = TypeVar("T")


class PickleStore:
    """A folder of pickles, two-level fan-out by key; ``directory=None`` stores nothing."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}.pkl"

    def load(self, key: str, default: Any = None) -> Any:
        if self.directory is None:
            return default
        try:
            with open(self.path(key), "rb") as fh:
                return pickle.load(fh)
        except _LOAD_ERRORS:
            return default

    def save(self, key: str, value: Any) -> None:
        if self.directory is None:
            return
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except (OSError, pickle.PicklingError):
            pass  # a read-only or full cache only costs speed


def facts_key(relpath: str, content: bytes) -> str:
    return hashlib.sha256(relpath.encode() + b"\0" + content).hexdigest()


class FactsCache:
    """Parsed facts per file; ``None`` directory disables caching (pure in-memory)."""

    def __init__(self, directory: Path | None) -> None:
        self.root = directory
        self.directory = directory / f"facts-v{FACTS_FORMAT}" if directory is not None else None
        self._store = PickleStore(self.directory)

    def get(self, key: str) -> ModuleFacts | None:
        facts = self._store.load(key)
        return facts if isinstance(facts, ModuleFacts) else None

    def put(self, key: str, facts: ModuleFacts) -> None:
        self._store.save(key, facts)

    def derived(self) -> PickleStore:
        """The store for tree-derived results (next to the facts, same on/off switch)."""
        return PickleStore(self.root / "derived" if self.root is not None else None)


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
    must be picklable and depend only on the tree: anything else belongs in the key.
    Trees without a fingerprint (none is cheap to compute) are memoised in memory only.
    """

    @functools.wraps(func)
    def wrapper(index: Any, *args: Any) -> T:
        memo: dict = index.__dict__.setdefault("_tree_memo", {})
        mem_key = (func.__qualname__, args)
        if mem_key in memo:
            return memo[mem_key]
        fingerprint = index.tree.fingerprint
        store = index.cache.derived() if fingerprint else PickleStore(None)
        key = hashlib.sha256(repr((fingerprint, index.tree.package, func.__module__, func.__qualname__,
                                   code_digest(), args)).encode()).hexdigest()
        value = store.load(key, _MISS)
        if value is _MISS:
            value = func(index, *args)
            store.save(key, value)
        memo[mem_key] = value
        return value

    return wrapper
