"""On-disk cache of parsed :class:`ModuleFacts`, keyed by path + content hash.

Keying by content (not by tree or version) means a file unchanged between two releases
is parsed once for both. Entries are pickles written atomically; an unreadable entry is
treated as a miss and overwritten, never as an error.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from rebasekit.index.models import FACTS_FORMAT, ModuleFacts


def facts_key(relpath: str, content: bytes) -> str:
    return hashlib.sha256(relpath.encode() + b"\0" + content).hexdigest()


class FactsCache:
    """A folder of pickled facts; ``None`` directory disables caching (pure in-memory)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory / f"facts-v{FACTS_FORMAT}" if directory is not None else None

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}.pkl"

    def get(self, key: str) -> ModuleFacts | None:
        if self.directory is None:
            return None
        try:
            with open(self._path(key), "rb") as fh:
                facts = pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError):
            return None
        return facts if isinstance(facts, ModuleFacts) else None

    def put(self, key: str, facts: ModuleFacts) -> None:
        if self.directory is None:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(facts, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache only costs speed
