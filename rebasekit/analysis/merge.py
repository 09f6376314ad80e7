"""Line-based three-way merge (base = upstream at OLD, ours = plugin, theirs = upstream at NEW).

The merge runs in process (:mod:`rebasekit.analysis.diff3` finds the hunks), so the
analysis layer opens no files and starts no process. Its output is what
``git merge-file`` writes in its default style: clean hunks merged, each conflict as
``<<<<<<< ours-label``, the plugin's lines, ``=======``, upstream's new lines,
``>>>>>>> theirs-label``. Lines are split on ``\\n`` only (a form feed or a lone ``\\r``
stays inside its line) and every line ending is kept as it came, so CRLF text merges to
CRLF text.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebasekit.analysis.diff3 import hunks


@dataclass(frozen=True)
class MergeResult:
    """The merged text; ``conflicts`` counts conflict regions left as markers in ``text``."""

    text: str
    conflicts: int

    @property
    def clean(self) -> bool:
        return self.conflicts == 0


def split_lines(text: str) -> list[str]:
    """``text`` as lines split on ``\\n`` alone, each keeping its ending."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def three_way(
    base: str, ours: str, theirs: str, labels: tuple[str, str, str] = ("plugin", "OLD", "NEW")
) -> MergeResult:
    """Merge upstream's OLD→NEW change into ``ours``; conflicts come back as markers.

    ``labels`` is (ours, base, theirs); the base label names the OLD side for callers and
    is not written, as in ``git merge-file``'s default style.
    """
    for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        if text and not text.endswith("\n"):
            raise ValueError(f"{name} text must end with a newline")
    z, a, b = split_lines(base), split_lines(ours), split_lines(theirs)
    eol = "\r\n" if any(line.endswith("\r\n") for line in (a or b)[:1]) else "\n"
    out: list[str] = []
    conflicts = 0
    for hunk in hunks(z, a, b):
        if hunk.kind == "unchanged":
            out.extend(z[hunk.base.start : hunk.base.stop])
        elif hunk.kind in ("ours", "same"):
            out.extend(a[hunk.ours.start : hunk.ours.stop])
        elif hunk.kind == "theirs":
            out.extend(b[hunk.theirs.start : hunk.theirs.stop])
        else:
            conflicts += 1
            out.append(f"<<<<<<< {labels[0]}{eol}")
            out.extend(a[hunk.ours.start : hunk.ours.stop])
            out.append(f"======={eol}")
            out.extend(b[hunk.theirs.start : hunk.theirs.stop])
            out.append(f">>>>>>> {labels[2]}{eol}")
    return MergeResult("".join(out), conflicts)
