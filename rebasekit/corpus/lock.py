"""The versioned patch corpus: every upstream surface the plugin binds to, at one pin.

``rebasekit corpus lock`` writes it (``rebasekit.lock.json`` next to the plugin
project's ``pyproject.toml``); ``corpus verify`` recomputes it and fails on any
difference, so a stale lock — the pin moved, or plugin code changed what it touches —
cannot go unnoticed. The lock also names the *base* tree for drift when no ``--from`` is
given: its ``upstream.version`` is the pin the plugin was last verified against
(:func:`rebasekit.load.lock_base` opens it). The document itself is built by
:func:`rebasekit.analysis.lockdoc.build_lock`; this module reads, writes and diffs it.

The file is deterministic (sorted keys and lists, no line numbers, no timestamps) so
that it diffs cleanly in review. ``SCHEMA`` is bumped whenever its shape changes.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from rebasekit.corpus.locate import find_pyproject
from rebasekit.corpus.models import PluginCorpus
from rebasekit.errors import InputError

LOCK_NAME = "rebasekit.lock.json"
SCHEMA = 1


def project_root(corpus: PluginCorpus) -> Path:
    """The plugin project's folder: where its ``pyproject.toml`` is (else the corpus root)."""
    pyproject = find_pyproject(corpus.root / corpus.package)
    return pyproject.parent if pyproject is not None else corpus.root


def default_lock_path(corpus: PluginCorpus) -> Path:
    return project_root(corpus) / LOCK_NAME


def dumps(lock: dict[str, Any]) -> str:
    return json.dumps(lock, indent=2, sort_keys=True) + "\n"


def read_lock(path: Path) -> dict[str, Any]:
    """Load a lock file; bad or foreign files are input errors (exit 2)."""
    regenerate = "regenerate it with `rebasekit corpus lock`"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(
            f"no lock file at {path}", hint="create it with `rebasekit corpus lock`"
        ) from exc
    except (OSError, ValueError) as exc:  # ValueError: bad JSON or not UTF-8
        raise InputError(
            f"{path} is not a readable rebasekit lock ({exc})", hint=regenerate
        ) from exc
    if not isinstance(data, dict) or "schema" not in data or "upstream" not in data:
        raise InputError(f"{path} is not a rebasekit lock file", hint=regenerate)
    if data["schema"] != SCHEMA:
        raise InputError(
            f"{path} uses lock schema {data['schema']!r}, this rebasekit writes {SCHEMA}",
            hint=regenerate,
        )
    upstream = data["upstream"]
    if (
        not isinstance(upstream, dict)
        or not isinstance(upstream.get("version"), str)
        or not upstream["version"]
    ):
        raise InputError(
            f'{path} records no upstream pin ("upstream": {{"version": "X.Y.Z"}})', hint=regenerate
        )
    return data


def lock_diff(recorded: dict[str, Any], current: dict[str, Any], label: str = "lock") -> str:
    """Unified diff of two lock documents ('' when equal)."""
    return "".join(
        difflib.unified_diff(
            dumps(recorded).splitlines(keepends=True),
            dumps(current).splitlines(keepends=True),
            fromfile=f"{label} (recorded)",
            tofile=f"{label} (current)",
        )
    )


def lock_version(corpus: PluginCorpus) -> str | None:
    """The pin recorded in the project's lock file; None without a lock file.

    Raises :class:`InputError` for a lock that exists but cannot be used.
    """
    path = default_lock_path(corpus)
    if not path.exists():
        return None
    return read_lock(path)["upstream"]["version"]
