"""Definition bodies: extraction, fingerprints, similarity and the diff summaries."""

from __future__ import annotations

import re
import textwrap

from rebasekit.analysis.bodies import (
    body_lines,
    changed_lines,
    definitions,
    fingerprint,
    similarity,
    unified,
)

MODULE = """\
import functools


@functools.cache
def top(x):
    \"\"\"Doc.\"\"\"
    def inner():
        return x
    return inner


class Box:
    size = 1

    def get(self):
        return self.size


def top(x):
    return "second definition: the first one is kept"
"""


def one(src: str):
    (defn,) = definitions(textwrap.dedent(src)).values()
    return defn


def test_definitions_have_kind_span_and_dedented_source() -> None:
    defs = definitions(MODULE)
    # Methods are listed, functions nested in functions are not; a repeated name keeps
    # its first definition.
    assert list(defs) == ["top", "Box", "Box.get"]
    lines = MODULE.splitlines()
    top = defs["top"]
    assert (top.kind, top.lineno) == ("function", lines.index("@functools.cache") + 1)
    assert top.end_lineno == lines.index("    return inner") + 1
    assert top.source.startswith("@functools.cache\ndef top(x):\n")
    get = defs["Box.get"]
    assert (get.kind, get.lineno) == ("function", lines.index("    def get(self):") + 1)
    assert get.source == "def get(self):\n    return self.size\n"
    assert defs["Box"].kind == "class"


def test_without_nested_only_top_level_definitions() -> None:
    assert list(definitions(MODULE, nested=False)) == ["top", "Box"]


def test_fingerprint_ignores_docstrings_comments_and_layout() -> None:
    a = one('def f(x):\n    """Old doc."""\n    return x + 1\n')
    b = one(
        'def f(x):\n    """New doc,\n    longer."""\n    # a comment\n    return (x\n            + 1)\n'
    )
    c = one("def f(x):\n    return x + 1\n")
    assert a.fingerprint == b.fingerprint == c.fingerprint
    # The lock file stores these as 16 hex digits.
    assert re.fullmatch("[0-9a-f]{16}", a.fingerprint)


def test_fingerprint_sees_code_behind_a_docstring() -> None:
    a = one('def f(x):\n    """Doc."""\n    return x + 1\n')
    b = one('def f(x):\n    """Doc."""\n    return x + 2\n')
    assert a.fingerprint != b.fingerprint
    # Also for a class whose methods have docstrings.
    ca = definitions(
        'class C:\n    """C."""\n    def m(self):\n        """M."""\n        return 1\n'
    )["C"]
    cb = definitions(
        'class C:\n    """C."""\n    def m(self):\n        """M."""\n        return 2\n'
    )["C"]
    assert fingerprint(ca.node) != fingerprint(cb.node)


def test_fingerprint_leaves_the_tree_unchanged() -> None:
    a = one('def f(x):\n    """Doc."""\n    return x\n')
    before = len(a.node.body)
    a.fingerprint  # noqa: B018
    assert len(a.node.body) == before == 2


def test_body_lines_skip_header_decorators_and_docstring() -> None:
    f = one('@dec\ndef f(x):\n    """Doc."""\n    y = x\n    return y\n')
    assert body_lines(f) == ["y = x", "return y"]
    only = one('def f(x):\n    """Doc."""\n    return x\n')
    assert body_lines(only) == ["return x"]
    # A docstring that is the whole body is the body.
    assert body_lines(one('def f():\n    """Only doc."""\n')) == ['"""Only doc."""']


def test_body_lines_start_at_a_decorated_nested_definition() -> None:
    f = one("def f():\n    @functools.cache\n    def g():\n        return 1\n    return g\n")
    assert body_lines(f) == [
        "@functools.cache",
        "def g():",
        "    return 1",
        "return g",
    ]


def test_similarity_ignores_comments_and_blank_lines() -> None:
    a = one("def f(x):\n    y = x\n    return y\n")
    b = one("def f(x):\n    # why\n\n    y = x\n    return y\n")
    assert similarity(a, b) == 1.0
    c = one("def f(x):\n    y = x\n    return -y\n")
    assert similarity(a, c) == 0.5  # one of two lines shared: 2*1/(2+2)


def test_similarity_of_long_repetitive_bodies() -> None:
    # difflib's auto-junk heuristic would drop lines that repeat in bodies of 200+ lines.
    body = "".join("    x += 1\n" for _ in range(250))
    a = one(f"def f(x):\n{body}    return x\n")
    b = one(f"def g(x):\n{body}    return x\n")
    assert similarity(a, b) == 1.0


def test_unified_diff_uses_the_labels_and_context() -> None:
    old = "a\nb\nc\nd\ne\n"
    new = "a\nb\nC\nd\ne\n"
    assert unified(old, new, "old/f.py", "new/f.py", context=1) == (
        "--- old/f.py\n+++ new/f.py\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n"
    )
    assert unified(old, new, "o", "n").count("\n ") == 4  # default: 3 lines of context, 2+2 here
    assert unified(old, old, "o", "n") == ""


def test_changed_lines_counts_removed_and_added() -> None:
    assert changed_lines("a\nb\nc\n", "a\nB\nc\nd\ne\n") == (1, 3)
    assert changed_lines("a\n", "a\n") == (0, 0)


def test_changed_lines_counts_lines_that_start_with_dashes_or_pluses() -> None:
    # A removed "----" underline or an added "+++" text line is a changed line, not a header.
    assert changed_lines("Title\n-----\n", "Title\n") == (1, 0)
    assert changed_lines("x\n", "x\n++y\n") == (0, 1)
