"""File-status stamps of a cached tree: which files need their content hashed again.

Re-hashing every file of three vLLM trees against their manifests took about 0.1 s of
each warm scan. After a file's SHA-256 was found equal to its manifest entry, its
status is recorded next to the manifest: size, modification time, status-change time
(ctime) and inode. A later run hashes a file again unless all four are exactly as
recorded and the recorded hash is still the manifest's.

What this guarantees: a file whose bytes changed through the file system since it was
last hashed is hashed again, so a cached tree that was edited, truncated, replaced or
copied elsewhere is still reported, never analysed as the release. Writing a file sets
its ctime to the current time and no user program can set a ctime back (``touch -r``
and ``os.utime`` restore the modification time, not ctime); replacing a file gives it
another inode. A file whose times are within :data:`SETTLE_NS` of the moment it was
hashed is not stamped, so an edit in the same tick of a coarse file-system clock as
the hash cannot slip through either. Not covered: bytes changed under the file system
(a raw write to the disk, bit rot) or a system clock set back by more than
:data:`SETTLE_NS`, which the full hash before this change caught. The stamps file is
data, never code; a damaged or foreign one only makes the next run hash everything.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from rebasekit.atomic import WriteError, write_bytes

STAMPS = ".rebasekit-stamps.json"
STAMPS_FORMAT = 1
# A file modified or changed this recently (nanoseconds) when hashed is not stamped.
SETTLE_NS = 2_000_000_000

Stamp = tuple[int, int, int, int]


def stamp_of(st: os.stat_result) -> Stamp:
    """The status fields that any write to the file, or its replacement, changes."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def settled(stamp: Stamp, now_ns: int) -> bool:
    """True when the file was last modified and changed well before ``now_ns``."""
    return max(stamp[1], stamp[2]) < now_ns - SETTLE_NS


def load(dest: Path, tree_digest: str) -> dict[str, tuple[Stamp, str]]:
    """Stamps recorded for the tree whose manifest digest is ``tree_digest`` (else none)."""
    try:
        data = json.loads((dest / STAMPS).read_text(encoding="utf-8"))
        if data["format"] != STAMPS_FORMAT or data["tree"] != tree_digest:
            return {}
        out: dict[str, tuple[Stamp, str]] = {}
        for rel, (size, mtime, ctime, ino, sha) in data["files"].items():
            fields = (size, mtime, ctime, ino)
            if (
                isinstance(rel, str)
                and isinstance(sha, str)
                and all(type(v) is int for v in fields)
            ):
                out[rel] = (fields, sha)
        return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def save(dest: Path, tree_digest: str, stamps: dict[str, tuple[Stamp, str]]) -> None:
    """Record ``stamps`` for the next run; a cache folder that cannot be written is left be."""
    files = {rel: [*stamp, sha] for rel, (stamp, sha) in sorted(stamps.items())}
    data = {"format": STAMPS_FORMAT, "tree": tree_digest, "files": files}
    try:
        write_bytes(dest / STAMPS, json.dumps(data, separators=(",", ":")).encode())
    except (WriteError, OSError):
        pass  # a read-only cache: every run hashes every file, as before


def now_ns() -> int:
    return time.time_ns()
