"""Line-based three-way merge (base = upstream at OLD, ours = plugin, theirs = upstream at NEW).

The merge runs in process with ``merge3`` (Breezy's merge algorithm), so the analysis
layer opens no files and starts no process. Its output is what ``git merge-file`` writes
in its default style: clean hunks merged, each conflict as ``<<<<<<< ours-label``, the
plugin's lines, ``=======``, upstream's new lines, ``>>>>>>> theirs-label``. Lines are
split on ``\\n`` only (a form feed or a lone ``\\r`` stays inside its line) and every
line ending is kept as it came, so CRLF text merges to CRLF text.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from merge3 import Merge3


@dataclass(frozen=True)
class MergeResult:
    """The merged text; ``conflicts`` counts conflict regions left as markers in ``text``."""

    text: str
    conflicts: int

    @property
    def clean(self) -> bool:
        return self.conflicts == 0


class _Matcher(difflib.SequenceMatcher):
    """difflib's matcher without its "popular line" heuristic.

    With autojunk on, a line that fills more than 1% of a file of 200+ lines (a blank
    line, a lone ``)``) can never anchor a match, which misaligns whole forked files.
    """

    def __init__(
        self,
        isjunk: Callable[[str], bool] | None = None,
        a: Sequence[str] = "",
        b: Sequence[str] = "",
        autojunk: bool = False,
    ) -> None:
        super().__init__(isjunk, a, b, autojunk=False)


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
    a, b = split_lines(ours), split_lines(theirs)
    merge = Merge3(split_lines(base), a, b, sequence_matcher=_Matcher)
    eol = "\r\n" if any(line.endswith("\r\n") for line in (a or b)[:1]) else "\n"
    out: list[str] = []
    conflicts = 0
    for region in merge.reprocess_merge_regions(merge.merge_regions()):
        kind = region[0]
        if kind == "unchanged":
            out.extend(merge.base[region[1] : region[2]])
        elif kind in ("a", "same"):
            out.extend(a[region[1] : region[2]])
        elif kind == "b":
            out.extend(b[region[1] : region[2]])
        else:
            _, _, _, ia, amatch, ib, bmatch = region
            conflicts += 1
            out.append(f"<<<<<<< {labels[0]}{eol}")
            out.extend(a[ia:amatch])
            out.append(f"======={eol}")
            out.extend(b[ib:bmatch])
            out.append(f">>>>>>> {labels[2]}{eol}")
    return MergeResult("".join(out), conflicts)
