"""Writes that never leave a file half-written: temp file in the same folder, fsync, rename.

Every file rebasekit writes for the user goes through here. A crash, a full disk or a
kill at any moment leaves either the old file or the new one, never a mix; the new file
keeps the old one's permission bits. :func:`replace_all` extends that to a set of files:
all are staged first and only renamed once every one of them was written, so a failure
on the second file leaves the first untouched too.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from rebasekit.errors import RebasekitError


class WriteError(RebasekitError):
    """A file could not be written (nothing of it was changed)."""


def _stage(path: Path, data: bytes) -> Path:
    """Write ``data`` to a fsynced temp file next to ``path`` (same mode); return its path."""
    folder = path.parent
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".rebasekit-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        except FileNotFoundError:
            os.chmod(tmp, 0o666 & ~_umask())
    except BaseException:
        _discard(Path(tmp))
        raise
    return Path(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _discard(tmp: Path) -> None:
    try:
        tmp.unlink()
    except OSError:
        pass


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fail(path: Path, exc: OSError) -> WriteError:
    reason = exc.strerror or str(exc)
    return WriteError(f"cannot write {path}: {reason}; the file was left as it was",
                      hint="check that the folder exists, is writable and the disk has room")


def write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (see module docstring)."""
    replace_all({path: data})


def write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    """:func:`write_bytes` for text; ``text`` is written as given (no newline translation)."""
    write_bytes(path, text.encode(encoding))


def replace_all(files: Mapping[Path, bytes]) -> None:
    """Write every file or none: stage all temp files, then rename them into place.

    Raises :class:`WriteError` when a file cannot be staged; every temp file is then
    removed and no target was touched. Renames within one folder do not fail in
    practice once the temp files exist; if one still does, the files already renamed
    stay new and the error says which.
    """
    staged: list[tuple[Path, Path]] = []
    try:
        for path, data in files.items():
            try:
                staged.append((path, _stage(path, data)))
            except OSError as exc:
                raise _fail(path, exc) from None
        done: list[Path] = []
        for path, tmp in staged:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                written = ", ".join(str(p) for p in done) or "none"
                raise WriteError(f"cannot replace {path}: {exc.strerror or exc} (already replaced: {written})",
                                 hint="check the folder's permissions; the originals' backups are kept") from None
            done.append(path)
        for folder in {p.parent for p in done}:
            _fsync_dir(folder)
    finally:
        for _, tmp in staged:
            if tmp.exists():
                _discard(tmp)
