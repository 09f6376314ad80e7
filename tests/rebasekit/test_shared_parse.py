"""One parse per distinct text, shared by the index, the body comparisons and the probes."""

from __future__ import annotations

import ast
import gc

import pytest

from rebasekit import gctune
from rebasekit.analysis.bodies import definitions
from rebasekit.astutil import parse_shared, parse_text
from rebasekit.index.visitor import parse_module

SOURCE = "import os\n\nclass A:\n    def f(self, x):\n        return x\n"


def test_index_and_bodies_share_one_tree():
    text = SOURCE + "# shared-parse test one\n"
    facts = parse_module(text.encode(), "m", "m.py", False)
    assert "A" in facts.defs
    tree = parse_shared(text)
    assert parse_shared(text.encode()) is tree  # bytes and text of one file: one tree
    assert parse_text(text) is tree
    assert definitions(text)["A.f"].node is tree.body[1].body[0]


def test_trees_equal_a_plain_parse():
    text = SOURCE + "# shared-parse test two\n"
    latin = b"# -*- coding: latin-1 -*-\ns = '\xe9'\n"
    for source in (text, latin, b"\xef\xbb\xbf" + text.encode()):
        assert ast.dump(parse_shared(source), include_attributes=True) == ast.dump(
            ast.parse(source), include_attributes=True
        )


def test_errors_name_each_callers_file_and_are_not_kept():
    bad = "def f(:\n"
    for name in ("a.py", "b.py"):
        with pytest.raises(SyntaxError) as info:
            parse_shared(bad, filename=name)
        assert info.value.filename == name
    assert parse_text(bad) is None
    facts = parse_module(bad, "m", "m.py", False)
    assert facts.syntax_error and "m.py" in facts.syntax_error


def test_bytes_only_errors_stay_errors():
    # a cookie naming no codec: the bytes parser refuses it, a decoded text would not
    with pytest.raises(SyntaxError):
        parse_shared(b"# coding: no-such-codec\nx = 1\n", filename="c.py")
    with pytest.raises(SyntaxError):
        parse_shared(b"x = '\xff'\n", filename="u.py")  # not UTF-8, no cookie


def test_collector_thresholds_raised_for_the_process():
    before = gc.get_threshold()
    try:
        gc.set_threshold(
            700, 10, 10
        )  # CPython's defaults; an earlier CLI test may have raised them
        gctune.for_syntax_trees()
        assert gc.get_threshold() == (gctune.YOUNG, gctune.MIDDLE, gctune.OLD)
        assert gctune.YOUNG > 700
    finally:
        gc.set_threshold(*before)
