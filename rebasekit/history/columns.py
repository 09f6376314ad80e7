"""The ledger's columns: branches, the commits that introduced each pin, the worktree.

Branches are ``main`` plus every local or remote branch matching the rebase globs (a
remote branch counts once, under its name without the remote, local copy preferred).
``--history REF`` adds, from REF's first-parent history, the first commit that declared
each pin; a pin some branch already declares keeps the branch column only, because a
living branch says more than a commit that once set the same pin.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

import git
from gitdb.exc import BadName, BadObject

from rebasekit.degradation import Degradation
from rebasekit.errors import InputError, SettingsError
from rebasekit.history.pins import Pin, PinSource, read_pin, version_key
from rebasekit.history.snapshots import BlobCache, CommitInfo, CommitSnapshot, WorktreeSnapshot

KIND_ORDER = {"commit": 0, "branch": 1, "worktree": 2}


@dataclass
class Column:
    """One pin column; ``since`` names the last commit that changed what the ledger reads."""

    kind: str  # "branch" | "commit" | "worktree"
    name: str
    pin: Pin | None
    snapshot: CommitSnapshot | WorktreeSnapshot
    info: CommitInfo | None = None
    since: CommitInfo | None = None
    ref: str | None = None  # the full ref name a branch column was read from
    cid: str = field(default="")

    @property
    def header(self) -> str:
        return self.pin.version if self.pin else "no pin"


def open_repo(path: Path) -> git.Repo:
    """The repository at ``path`` (or above it); bad input when there is none."""
    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise InputError(
            f"{path} is not inside a git repository",
            hint="pass --repo with the plugin's git checkout",
        ) from None


def has_commits(repo: git.Repo) -> bool:
    try:
        _ = repo.head.commit
    except ValueError:
        return False
    return True


def _matches(name: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, g) for g in globs)


def find_branches(repo: git.Repo, globs: tuple[str, ...], main: str) -> dict[str, str]:
    """Branch name -> full ref for ``main`` and every rebase branch, local before remote."""
    local: dict[str, str] = {}
    remote: dict[str, str] = {}
    for ref in repo.references:
        if isinstance(ref, git.RemoteReference):  # a subclass of Head: test it first
            name, bucket = ref.remote_head, remote
        elif isinstance(ref, git.Head):
            name, bucket = ref.name, local
        else:
            continue
        if name == "HEAD" or not (name == main or _matches(name, globs)):
            continue
        bucket.setdefault(name, ref.path)
    return {**remote, **local}


def resolve_commit(repo: git.Repo, ref: str) -> git.Commit:
    if ref.startswith("-"):  # would reach `git log` as an option
        raise InputError(
            f"{ref!r} is not a git ref (a ref never starts with '-')",
            hint="give a branch, tag or commit id that exists in the repository",
        )
    try:
        return repo.commit(ref)
    except (BadName, BadObject, ValueError, git.GitCommandError):
        raise InputError(
            f"{ref!r} names no commit in {repo.working_tree_dir}",
            hint="give a branch, tag or commit id that exists in the repository",
        ) from None


class ColumnBuilder:
    """Builds columns for one repository, sharing blob and pin caches between them."""

    def __init__(self, repo: git.Repo, source: PinSource, watched: tuple[str, ...]) -> None:
        self.repo = repo
        self.source = source
        self.cache = BlobCache()
        self._pins: dict[tuple[str | None, ...], Pin | None] = {}
        self._unreadable: dict[tuple[str | None, ...], str] = {}  # pin-file blob ids -> parse error
        self.degradations: list[Degradation] = []
        # Files whose change alters a column's row values: pin sources and probed files.
        self.watched = tuple(dict.fromkeys(source.paths() + watched))

    def pin_of(self, snapshot: CommitSnapshot) -> Pin | None:
        key = tuple(snapshot.blob_id(p) for p in self.source.paths())
        if key not in self._pins:
            try:
                self._pins[key] = read_pin(snapshot.read, self.source)
            except SettingsError as exc:
                self._pins[key] = None
                self._unreadable[key] = exc.message
        if key in self._unreadable:
            self.degradations.append(
                Degradation(
                    "revision-unreadable",
                    f"commit {snapshot.commit.hexsha[:10]}",
                    f"{self._unreadable[key]} at that commit; its pin is unknown "
                    "and the revision was left out of the ledger",
                    "fix the file in a new commit on that branch, or pass --allow-incomplete to accept the ledger without it",
                )
            )
        return self._pins[key]

    def unreadable(self, snapshot: CommitSnapshot) -> bool:
        return tuple(snapshot.blob_id(p) for p in self.source.paths()) in self._unreadable

    def _last_change(self, ref: str) -> CommitInfo | None:
        out = self.repo.git.log(ref, "-1", "--first-parent", "--format=%H", "--", *self.watched)
        return CommitInfo.of(self.repo.commit(out.strip())) if out.strip() else None

    def branch(self, name: str, ref: str) -> Column:
        commit = resolve_commit(self.repo, ref)
        snap = CommitSnapshot(commit, self.cache)
        return Column(
            "branch",
            name,
            self.pin_of(snap),
            snap,
            CommitInfo.of(commit),
            self._last_change(ref),
            ref,
        )

    def history(self, ref: str) -> list[Column]:
        """First commit on REF's first-parent line that declared each distinct pin."""
        resolve_commit(self.repo, ref)
        log = self.repo.git.log(
            ref, "--first-parent", "--reverse", "--format=%H", "--", *self.source.paths()
        )
        columns: list[Column] = []
        seen: set[str] = set()
        for sha in log.split():
            commit = self.repo.commit(sha)
            snap = CommitSnapshot(commit, self.cache)
            pin = self.pin_of(snap)
            if pin is None or pin.version in seen:
                continue
            seen.add(pin.version)
            info = CommitInfo.of(commit)
            columns.append(Column("commit", info.sha, pin, snap, info, info))
        return columns

    def worktree(self) -> Column:
        root = Path(self.repo.working_tree_dir or ".")
        snap = WorktreeSnapshot(root)
        return Column("worktree", "working tree", read_pin(snap.read, self.source), snap)


def order_columns(
    branches: list[Column], commits: list[Column], worktree: Column | None, main: str
) -> list[Column]:
    """Branches win over commits with the same pin; then sort by version and number."""
    taken = {c.pin.version for c in branches if c.pin}
    kept = [c for c in commits if c.pin and c.pin.version not in taken]
    every = branches + kept + ([worktree] if worktree else [])
    every.sort(
        key=lambda c: (
            version_key(c.pin.version if c.pin else None),
            KIND_ORDER[c.kind],
            c.name != main,
            c.name,
        )
    )
    for i, column in enumerate(every, 1):
        column.cid = f"C{i}"
    return every
