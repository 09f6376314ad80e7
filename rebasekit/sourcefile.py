"""Read Python source files the way Python does, and refuse the ones that are not files.

One reader for the plugin corpus, the upstream trees and ``port``:

* only regular files are opened (checked with ``stat`` first, opened non-blocking), so a
  named pipe, a device such as ``/dev/zero``, a folder called ``x.py`` or a dangling
  symlink is skipped with a reason instead of hanging, exhausting memory or crashing;
* at most :data:`MAX_SOURCE_BYTES` + 1 bytes are read: a bigger file is skipped;
* text is decoded as the interpreter would (PEP 263 coding cookie, UTF-8 BOM), and
  :class:`SourceText` remembers the encoding and line endings so a rewritten file keeps
  both.
"""

from __future__ import annotations

import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path

from rebasekit.degradation import Degradation

# Per-file size cap: the largest module of vLLM 0.26.0 is about 0.3 MB, so 2 MiB leaves
# room while keeping a stray generated or binary file from costing gigabytes of memory.
MAX_SOURCE_BYTES = 2 * 1024 * 1024


class SkippedFile(OSError):
    """A path that is not a readable source file; ``reason`` says why (one line)."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason

    def degradation(self, subject: str | None = None) -> Degradation:
        return Degradation(
            kind="file-skipped",
            subject=subject or self.path,
            message=f"skipped: {self.reason}",
            fix="remove or replace it with a regular source file, or split it below the size cap",
        )


def source_problem(path: Path, cap: int = MAX_SOURCE_BYTES) -> str | None:
    """Why ``path`` cannot be read as a source file, or None if it can (``stat`` only)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "dangling symlink" if os.path.islink(path) else "no such file"
    except OSError as exc:
        return f"cannot stat it ({exc.strerror or exc})"
    if stat.S_ISDIR(st.st_mode):
        return "a folder, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (pipe, socket or device)"
    if st.st_size > cap:
        return f"larger than the {cap // (1024 * 1024)} MiB size cap ({st.st_size} bytes)"
    return None


def read_source_bytes(path: Path, cap: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes; raises :class:`SkippedFile`."""
    problem = source_problem(path, cap)
    if problem is not None:
        raise SkippedFile(path, problem)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # a pipe swapped in never blocks
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise SkippedFile(path, f"cannot open it ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # swapped after the stat above
            raise SkippedFile(path, "not a regular file (pipe, socket or device)")
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise SkippedFile(path, f"larger than the {cap // (1024 * 1024)} MiB size cap")
    return data


def source_encoding(data: bytes) -> str:
    """The encoding Python would use for ``data`` (cookie or BOM; UTF-8 by default)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except (SyntaxError, LookupError):
        return "utf-8"
    return encoding


def decode_source(data: bytes) -> str:
    """``data`` as text, decoded like the interpreter does; undecodable bytes become U+FFFD."""
    try:
        return data.decode(source_encoding(data))
    except (UnicodeDecodeError, LookupError):
        return data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class SourceText:
    """A file's text with ``\\n`` line ends, plus what is needed to write it back the same way."""

    text: str
    encoding: str  # as detected ("utf-8-sig" when the file starts with a BOM)
    newline: str  # "\r\n" when the file used CRLF line ends, else "\n"

    @classmethod
    def from_bytes(cls, data: bytes) -> SourceText:
        encoding = source_encoding(data)
        try:
            raw = data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            encoding, raw = "utf-8", data.decode("utf-8", errors="replace")
        newline = "\r\n" if "\r\n" in raw else "\n"
        return cls(raw.replace("\r\n", "\n"), encoding, newline)

    def encode(self, text: str) -> bytes:
        """``text`` (``\\n`` line ends) in this file's encoding and line-end style."""
        if self.newline != "\n":
            text = text.replace("\r\n", "\n").replace("\n", self.newline)
        return text.encode(self.encoding)


def read_source(path: Path, cap: int = MAX_SOURCE_BYTES) -> SourceText:
    """:class:`SourceText` of a source file; raises :class:`SkippedFile` (see module docstring)."""
    return SourceText.from_bytes(read_source_bytes(path, cap))


def read_source_text(path: Path, cap: int = MAX_SOURCE_BYTES) -> str:
    """Just the text (``\\n`` line ends) of :func:`read_source`."""
    return read_source(path, cap).text
