"""Writing a port plan into the plugin without ever losing the user's work.

Before anything is written: leftover conflict markers in any plugin file stop the port
(a second run over an unfinished merge must not read as "nothing to port"); files with
uncommitted changes in git stop it unless ``--force``. Then every original is copied into
a backup folder, every new file is staged next to its target, and only when all of that
succeeded are the files renamed into place (:func:`rebasekit.atomic.replace_all`).
A file keeps its encoding (coding cookie, BOM) and its line endings (CRLF stays CRLF).
Outside a git repository nothing can tell committed from uncommitted work, so the
backup folder is what keeps the originals; the command says so.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rebasekit.atomic import WriteError, replace_all
from rebasekit.errors import InputError
from rebasekit.sourcefile import SkippedFile, read_source

BACKUP_DIR = ".rebasekit-backup"
_MARKER = re.compile(r"^(<{7}|>{7})(?: |$)", re.M)


@dataclass(frozen=True)
class WriteReport:
    written: list[str]
    backup: Path
    in_git: bool


def conflict_marker_files(root: Path, relpaths: list[str]) -> list[tuple[str, int]]:
    """(relpath, first line) of every file holding a ``<<<<<<<`` or ``>>>>>>>`` line."""
    found = []
    for rel in relpaths:
        try:
            text = read_source(root / rel).text
        except SkippedFile:
            continue
        match = _MARKER.search(text)
        if match:
            found.append((rel, text.count("\n", 0, match.start()) + 1))
    return found


def refuse_conflict_markers(root: Path, relpaths: list[str]) -> None:
    found = conflict_marker_files(root, relpaths)
    if found:
        where = ", ".join(f"{rel}:{line}" for rel, line in found)
        raise InputError(
            f"unresolved conflict markers from an earlier merge in {where}",
            hint="resolve them (or restore the file from its backup or git) and run port again",
        )


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL
    )


def git_toplevel(root: Path) -> Path | None:
    try:
        proc = _git(root, "rev-parse", "--show-toplevel")
    except FileNotFoundError:
        return None
    return Path(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else None


def uncommitted(root: Path, paths: list[Path]) -> list[str]:
    """The paths git reports as modified, staged or untracked (``git status``)."""
    proc = _git(
        root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *map(str, paths)
    )
    if proc.returncode != 0:
        raise InputError(
            f"git status failed in {root}: {proc.stderr.strip()}",
            hint="fix the repository (git status) or pass --force",
        )
    return [entry[3:] for entry in proc.stdout.split("\0") if len(entry) > 3]


def write_port(root: Path, files: dict[str, tuple[str, str]], force: bool = False) -> WriteReport:
    """Write every ported file or none; ``files`` is relpath -> (text planned from, new text)."""
    targets = {rel: root / rel for rel in files}
    top = git_toplevel(root)
    if top is not None and not force:
        dirty = uncommitted(top, list(targets.values()))
        if dirty:
            raise InputError(
                f"uncommitted changes in {', '.join(sorted(dirty))}: port would mix its merge into them",
                hint="commit or stash them first, or pass --force (the originals are backed up)",
            )
    new_bytes: dict[Path, bytes] = {}
    old_bytes: dict[str, bytes] = {}
    for rel, (planned_from, ported) in files.items():
        try:
            source = read_source(targets[rel])
        except SkippedFile as exc:
            raise InputError(
                f"cannot port into {rel}: {exc.reason}", hint="make it a regular file"
            ) from None
        if source.text != planned_from:
            raise InputError(f"{rel} changed while port was running", hint="run port again")
        try:
            new_bytes[targets[rel]] = source.encode(ported)
        except UnicodeEncodeError as exc:
            raise InputError(
                f"the merged text of {rel} cannot be written in its encoding {source.encoding}: {exc.reason}",
                hint="change the file's coding cookie to utf-8, or port that change by hand",
            ) from None
        old_bytes[rel] = targets[rel].read_bytes()
    try:
        (root / BACKUP_DIR).mkdir(exist_ok=True)
        backup = Path(
            tempfile.mkdtemp(prefix=time.strftime("port-%Y%m%d-%H%M%S-"), dir=root / BACKUP_DIR)
        )
        for rel in old_bytes:
            (backup / rel).parent.mkdir(parents=True, exist_ok=True)
        replace_all({backup / rel: data for rel, data in old_bytes.items()})
    except OSError as exc:
        raise WriteError(
            f"cannot back up the originals into {root / BACKUP_DIR}: {exc.strerror or exc}; "
            "nothing was written",
            hint="make the plugin's folder writable and retry",
        ) from None
    replace_all(new_bytes)
    return WriteReport(sorted(files), backup, top is not None)
