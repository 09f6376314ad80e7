"""Hunk boundaries of the in-process three-way merge.

Every expected merged text below is what ``git merge-file -p -L plugin -L OLD -L NEW``
writes for the same three inputs (checked with git 2.39); the hunk-level tests pin the
ranges the text is cut from.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebasekit.analysis.diff3 import Hunk, hunks
from rebasekit.analysis.merge import three_way


def lines(words: str) -> str:
    """``"a b"`` as the text ``"a\\nb\\n"``."""
    return "".join(w + "\n" for w in words.split())


def conflict(ours: str, theirs: str) -> str:
    return f"<<<<<<< plugin\n{lines(ours)}=======\n{lines(theirs)}>>>>>>> NEW\n"


CASES = {
    # an insertion right before a line the other side changed touches that change
    "insert next to a change": ("a b c d", "a b X c d", "a b C d", 1, "a b" + "|X c|C|" + "d"),
    "change at start and at end": ("a b", "A b", "a B", 1, "|A b|a B|"),
    "insert at start, change at end": ("a b c", "P a b c", "a b C", 0, "P a b C"),
    "both insert at start": ("a b", "X a b", "Y a b", 1, "|X|Y|a b"),
    "change at start, insert at end": ("a b c", "A b c", "a b c Z", 0, "A b c Z"),
    "both insert at end": ("a b", "a b X", "a b Y", 1, "a b|X|Y|"),
    "one side deletes all": ("a b c", "", "a b c", 0, ""),
    "both delete all": ("a b c", "", "", 0, ""),
    "delete all against a change": ("a b c", "", "a B c", 1, "||a B c|"),
    "same insertion and deletion": ("a b c d", "a N b d", "a N b d", 0, "a N b d"),
    "overlapping changes": ("a b c d e", "a B C d e", "a b X D e", 1, "a|B C d|b X D|e"),
    # the line both sides changed alike leaves the conflict
    "shared line narrowed out": ("a b c", "A B c", "A b c", 1, "A|B|b|c"),
    # three shared lines between two conflicts are joined into them, four are not
    "conflicts three lines apart": (
        "a 1 2 3 b",
        "A 1 2 3 B",
        "X 1 2 3 Y",
        1,
        "|A 1 2 3 B|X 1 2 3 Y|",
    ),
    "conflicts four lines apart": (
        "a 1 2 3 4 b",
        "A 1 2 3 4 B",
        "X 1 2 3 4 Y",
        2,
        "|A|X|1 2 3 4|B|Y|",
    ),
    # ... unless those lines hold no letter or digit
    "conflicts apart by punctuation": (
        "a ) ( ] [ b",
        "A ) ( ] [ B",
        "X ) ( ] [ Y",
        1,
        "|A ) ( ] [ B|X ) ( ] [ Y|",
    ),
    # a one-sided change between two conflicts keeps them apart
    "one-sided change between": ("a 1 m 2 b", "A 1 m 2 B", "X 1 M 2 Y", 2, "|A|X|1 M 2|B|Y|"),
}


def expected_text(spec: str) -> str:
    """``"a|X|Y|b"``: plain words, then (ours|theirs|) conflicts, alternating."""
    parts = spec.split("|")
    out, i = [], 0
    while i < len(parts):
        out.append(lines(parts[i]))
        if i + 2 < len(parts):
            out.append(conflict(parts[i + 1], parts[i + 2]))
        i += 3
    return "".join(out)


def test_expected_text_spec_reads_as_meant() -> None:
    assert expected_text("a|X|Y|b") == "a\n<<<<<<< plugin\nX\n=======\nY\n>>>>>>> NEW\nb\n"
    assert expected_text("a b") == "a\nb\n"


@pytest.mark.parametrize("name", list(CASES))
def test_merge_matches_git(name: str) -> None:
    base, ours, theirs, conflicts, spec = CASES[name]
    result = three_way(lines(base), lines(ours), lines(theirs))
    assert (result.text, result.conflicts) == (expected_text(spec), conflicts)


def test_insert_at_start_is_its_own_hunk() -> None:
    got = hunks(["a", "b"], ["P", "a", "b"], ["a", "B"])
    assert got == [
        Hunk("ours", range(0, 0), range(0, 1), range(0, 0)),
        Hunk("unchanged", range(0, 1), range(1, 2), range(0, 1)),
        Hunk("theirs", range(1, 2), range(2, 3), range(1, 2)),
    ]


def test_adjacent_edits_make_one_conflict_hunk() -> None:
    got = hunks(["a", "b", "c"], ["a", "B", "c"], ["a", "b", "C"])
    assert [h.kind for h in got] == ["unchanged", "conflict"]
    assert got[1] == Hunk("conflict", range(1, 3), range(1, 3), range(1, 3))


def test_identical_change_is_a_same_hunk() -> None:
    got = hunks(["a", "b", "c"], ["a", "B", "c"], ["a", "B", "c"])
    assert [h.kind for h in got] == ["unchanged", "same", "unchanged"]
    assert got[1] == Hunk("same", range(1, 2), range(1, 2), range(1, 2))


def test_delete_all_is_one_hunk_with_empty_ours() -> None:
    assert hunks(["a", "b"], [], ["a", "b"]) == [
        Hunk("ours", range(0, 2), range(0, 0), range(0, 2))
    ]
    assert hunks([], [], []) == []


def test_narrowed_conflict_keeps_its_stretch_base() -> None:
    got = hunks(["a", "b", "c"], ["A", "B", "c"], ["A", "b", "c"])
    assert got[:2] == [
        Hunk("same", range(0, 2), range(0, 1), range(0, 1)),
        Hunk("conflict", range(0, 2), range(1, 2), range(1, 2)),
    ]


WORDS = st.lists(st.sampled_from(["a", "b", "c", "", ")"]), max_size=8)


@given(WORDS, WORDS, WORDS)
def test_hunks_tile_every_side_and_agree_with_their_kind(
    base: list[str], ours: list[str], theirs: list[str]
) -> None:
    got = hunks(base, ours, theirs)
    for side, seq in (("ours", ours), ("theirs", theirs)):
        ranges = [getattr(h, side) for h in got]
        assert [i for r in ranges for i in r] == list(range(len(seq)))
    for h in got:
        a, b = ours[h.ours.start : h.ours.stop], theirs[h.theirs.start : h.theirs.stop]
        if h.kind == "unchanged":
            assert a == b == base[h.base.start : h.base.stop]
        elif h.kind == "same":
            assert a == b
        elif h.kind == "ours":
            assert b == base[h.base.start : h.base.stop] != a
        elif h.kind == "theirs":
            assert a == base[h.base.start : h.base.stop] != b
        else:
            assert a != b
