"""The hunks of a three-way line merge, computed before any text is written.

The classic diff3 idea: align the base with each side, keep the stretches of base that
both sides leave untouched as stable anchors, and judge each stretch between two anchors
on its own: untouched, changed by one side, changed alike by both, or a conflict. Two
edits that touch (no untouched base line between them) fall into one stretch and so
conflict, as in ``git merge-file``. A conflict is then narrowed the way git's "zealous"
level narrows it: lines both sides hold in common are taken out of it, and conflicts
that end up separated only by a few lines (or by lines without a letter or digit) are
joined back into one, so the reviewer sees what git would show.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

Kind = Literal["unchanged", "ours", "theirs", "same", "conflict"]

# git joins two conflicts when at most this many lines separate them.
_JOIN_GAP = 3


@dataclass(frozen=True)
class Hunk:
    """One stretch of the merge, as half-open line ranges into base, ours and theirs.

    ``unchanged``: every side holds the base lines. ``ours`` / ``theirs``: only that side
    changed them. ``same``: both sides hold the same lines. ``conflict``: the two sides
    differ and neither is the base. The base range of a narrowed conflict is the one of
    the stretch it was cut from.
    """

    kind: Kind
    base: range
    ours: range
    theirs: range


def _matches(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int]]:
    """Matching blocks of ``a`` and ``b`` (start in a, start in b, length), sentinel dropped.

    difflib's "popular line" heuristic is off: with it, a line filling more than 1% of a
    200+ line file (a blank line, a lone ``)``) can never anchor a match, which misaligns
    whole forked files.
    """
    blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    return [(i, j, n) for i, j, n in blocks if n]


def _anchors(
    base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]
) -> Iterator[tuple[int, int, int, int]]:
    """Stable stretches: (base start, ours start, theirs start, length), in order.

    A base line is stable when the alignment with ours and the one with theirs both
    match it; the two block lists are walked together and their overlaps kept.
    """
    with_ours, with_theirs = _matches(base, ours), _matches(base, theirs)
    i = j = 0
    while i < len(with_ours) and j < len(with_theirs):
        bo, o, no = with_ours[i]
        bt, t, nt = with_theirs[j]
        lo, hi = max(bo, bt), min(bo + no, bt + nt)
        if lo < hi:
            yield lo, o + lo - bo, t + lo - bt, hi - lo
        if bo + no <= bt + nt:
            i += 1
        else:
            j += 1


def _judge(
    base: Sequence[str], ours: Sequence[str], theirs: Sequence[str], z: range, a: range, b: range
) -> Kind:
    """Kind of the stretch between two anchors."""
    zs, as_, bs = base[z.start : z.stop], ours[a.start : a.stop], theirs[b.start : b.stop]
    if as_ == bs:
        return "same"
    if as_ == zs:
        return "theirs"
    if bs == zs:
        return "ours"
    return "conflict"


def _narrow(ours: Sequence[str], theirs: Sequence[str], hunk: Hunk) -> Iterator[Hunk]:
    """``hunk`` (a conflict) with the lines both sides share taken out as ``same`` hunks."""
    a, b = hunk.ours, hunk.theirs
    i, j = a.start, b.start
    for da, db, n in _matches(ours[a.start : a.stop], theirs[b.start : b.stop]):
        if a.start + da > i or b.start + db > j:
            yield Hunk("conflict", hunk.base, range(i, a.start + da), range(j, b.start + db))
        i, j = a.start + da + n, b.start + db + n
        yield Hunk("same", hunk.base, range(i - n, i), range(j - n, j))
    if a.stop > i or b.stop > j:
        yield Hunk("conflict", hunk.base, range(i, a.stop), range(j, b.stop))


def _has_alnum(lines: Sequence[str]) -> bool:
    """Whether any line holds an ASCII letter or digit (git's test, byte-wise)."""
    return any(c.isascii() and c.isalnum() for line in lines for c in line)


def _join(ours: Sequence[str], hunks: list[Hunk]) -> list[Hunk]:
    """Join conflicts separated only by a short or letterless run of shared lines.

    A one-sided change between two conflicts keeps them apart, as in git.
    """
    out: list[Hunk] = []
    pending: list[Hunk] = []  # shared hunks since the last conflict in ``out``
    for hunk in hunks:
        if hunk.kind in ("unchanged", "same") and out and out[-1].kind == "conflict":
            pending.append(hunk)
            continue
        if hunk.kind == "conflict" and out and out[-1].kind == "conflict":
            prev = out[-1]
            gap = ours[prev.ours.stop : hunk.ours.start]
            if len(gap) <= _JOIN_GAP or not _has_alnum(gap):
                out[-1] = Hunk(
                    "conflict",
                    range(prev.base.start, max(prev.base.stop, hunk.base.stop)),
                    range(prev.ours.start, hunk.ours.stop),
                    range(prev.theirs.start, hunk.theirs.stop),
                )
                pending = []
                continue
        out.extend(pending)
        pending = []
        out.append(hunk)
    out.extend(pending)
    return out


def hunks(base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]) -> list[Hunk]:
    """Every stretch of the merge of ``ours`` and ``theirs`` over ``base``, in order.

    Empty stretches are left out; the ranges of consecutive hunks abut on every side.
    """
    raw: list[Hunk] = []
    z = a = b = 0
    for zs, as_, bs, n in [*_anchors(base, ours, theirs), (len(base), len(ours), len(theirs), 0)]:
        stretch = (range(z, zs), range(a, as_), range(b, bs))
        if any(stretch):
            kind = _judge(base, ours, theirs, *stretch)
            if kind == "conflict":
                raw.extend(_narrow(ours, theirs, Hunk(kind, *stretch)))
            else:
                raw.append(Hunk(kind, *stretch))
        if n:
            raw.append(Hunk("unchanged", range(zs, zs + n), range(as_, as_ + n), range(bs, bs + n)))
        z, a, b = zs + n, as_ + n, bs + n
    return _join(ours, raw)
