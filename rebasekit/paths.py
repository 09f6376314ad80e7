"""Where rebasekit keeps its caches (downloaded trees, parsed-module facts)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

CACHE_ENV = "REBASEKIT_CACHE_DIR"


def cache_root() -> Path:
    """Cache root: ``$REBASEKIT_CACHE_DIR`` if set, else the platform user cache dir."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_cache_dir("rebasekit"))


def trees_dir() -> Path:
    """Extracted release trees, one folder per ``<package>-<version>``."""
    return cache_root() / "trees"


def corpus_dir() -> Path:
    """Extracted plugin corpora, keyed by every plugin file's content and the settings."""
    return cache_root() / "corpus"


def index_dir() -> Path:
    """Parsed-module facts, keyed by file content hash (shared by all trees)."""
    return cache_root() / "index"
