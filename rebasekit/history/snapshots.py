"""Snapshots of the plugin repository: a commit's tree or the working tree.

Files are read as blobs straight from the object store (``commit.tree / path``); nothing
is checked out and no worktree is created, so mining hundreds of commits costs one blob
read per *distinct* file version: texts are cached by blob id across all snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import git


@dataclass(frozen=True)
class CommitInfo:
    """What a legend needs to name a commit: a fixed-length id, a UTC date, a subject."""

    sha: str
    date: str
    subject: str

    @classmethod
    def of(cls, commit: git.Commit) -> CommitInfo:
        when = datetime.fromtimestamp(commit.committed_date, tz=timezone.utc)
        message = commit.message if isinstance(commit.message, str) else commit.message.decode()
        subject = (message.strip().splitlines() or [""])[0]
        return cls(commit.hexsha[:10], when.strftime("%Y-%m-%d"), subject)

    def render(self) -> str:
        return f"{self.sha} {self.date} {self.subject}"


@dataclass
class BlobCache:
    """Decoded blob texts keyed by blob id, shared by every snapshot of one repository."""

    texts: dict[str, str] = field(default_factory=dict)

    def text(self, blob: git.Blob) -> str:
        cached = self.texts.get(blob.hexsha)
        if cached is None:
            cached = blob.data_stream.read().decode("utf-8", errors="replace")
            self.texts[blob.hexsha] = cached
        return cached


class CommitSnapshot:
    """A commit's files, read from blobs."""

    def __init__(self, commit: git.Commit, cache: BlobCache) -> None:
        self.commit = commit
        self._cache = cache

    def blob_id(self, path: str) -> str | None:
        try:
            obj = self.commit.tree / path
        except KeyError:
            return None
        return obj.hexsha if obj.type == "blob" else None

    def read(self, path: str) -> str | None:
        try:
            obj = self.commit.tree / path
        except KeyError:
            return None
        return self._cache.text(obj) if obj.type == "blob" else None

    def python_files(self, folder: str) -> list[str]:
        """Repo-relative ``.py`` files under ``folder`` (the plugin package), sorted."""
        try:
            top = self.commit.tree / folder
        except KeyError:
            return []
        if top.type != "tree":
            return []
        return sorted(
            item.path
            for item in top.traverse()
            if getattr(item, "type", None) == "blob" and item.path.endswith(".py")
        )


class WorktreeSnapshot:
    """The files on disk under the repository root, uncommitted edits included."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, path: str) -> str | None:
        target = self.root / path
        if not target.is_file():
            return None
        return target.read_text(encoding="utf-8", errors="replace")

    def python_files(self, folder: str) -> list[str]:
        """Repo-relative ``.py`` files under ``folder`` on disk, sorted."""
        top = self.root / folder
        if not top.is_dir():
            return []
        return sorted(p.relative_to(self.root).as_posix() for p in top.rglob("*.py"))
