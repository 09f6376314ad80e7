"""The in-process three-way merge writes what ``git merge-file`` writes, line ends included."""

from __future__ import annotations

import pytest

from rebasekit.analysis.merge import split_lines, three_way


def test_conflict_markers_carry_the_labels() -> None:
    result = three_way("a\n", "x\n", "y\n", labels=("mine", "old", "new"))
    assert result.conflicts == 1
    assert result.text == "<<<<<<< mine\nx\n=======\ny\n>>>>>>> new\n"


def test_crlf_text_keeps_crlf_in_lines_and_markers() -> None:
    result = three_way("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n", "a\r\nX\r\nc\r\n")
    assert result.text == "a\r\n<<<<<<< plugin\r\nB\r\n=======\r\nX\r\n>>>>>>> NEW\r\nc\r\n"


def test_crlf_clean_merge_stays_crlf() -> None:
    result = three_way("a\r\nb\r\nc\r\nd\r\n", "A\r\nb\r\nc\r\nd\r\n", "a\r\nb\r\nc\r\nD\r\n")
    assert (result.text, result.conflicts) == ("A\r\nb\r\nc\r\nD\r\n", 0)


@pytest.mark.parametrize("sep", ["\x0c", "\r", "\x0b", "\u2028"])
def test_only_newline_ends_a_line(sep: str) -> None:
    # Two edits inside one line are one conflict, not two clean edits of two "lines".
    result = three_way(f"p{sep}q\n", f"p{sep}Q\n", f"P{sep}q\n")
    assert result.conflicts == 1
    assert result.text == f"<<<<<<< plugin\np{sep}Q\n=======\nP{sep}q\n>>>>>>> NEW\n"


def test_adjacent_edits_conflict_as_in_git() -> None:
    # Changes on touching lines are left to the reviewer, as git merge-file does.
    result = three_way("a\nb\nc\n", "a\nB\nc\n", "a\nb\nC\n")
    assert result.conflicts == 1
    assert result.text == "a\n<<<<<<< plugin\nB\nc\n=======\nb\nC\n>>>>>>> NEW\n"


def test_non_ascii_text_merges_as_text() -> None:
    base = "r\u00e9sum\u00e9 = 1\nx = 0\ny = 0\nz = 0\n"
    result = three_way(base, base.replace("z = 0", "z = 9"), base.replace("1", "2"))
    assert result.text == "r\u00e9sum\u00e9 = 2\nx = 0\ny = 0\nz = 9\n"


def test_both_sides_making_the_same_change_is_clean() -> None:
    result = three_way("a\nb\nc\n", "a\nB\nc\n", "a\nB\nc\n")
    assert (result.text, result.conflicts) == ("a\nB\nc\n", 0)


def test_empty_texts_merge() -> None:
    assert three_way("", "", "x\n").text == "x\n"
    assert three_way("x\n", "x\n", "").text == ""


def test_split_lines_keeps_every_ending() -> None:
    assert split_lines("a\r\nb\x0cc\nd") == ["a\r\n", "b\x0cc\n", "d"]
    assert split_lines("") == []
