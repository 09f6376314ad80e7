"""How a function's returns are classified, which decides RK302 (unpacking a changed return).

``a, b = f()`` breaks when ``f`` stops returning 2-tuples; the classification must only
claim a shape it can see, so a call result or a generator is "unknown", never a mismatch.
"""

from __future__ import annotations

import ast

import pytest

from rebasekit.analysis.merge import three_way
from rebasekit.analysis.shapes import ReturnShape, return_shape


def shape(source: str) -> ReturnShape:
    node = ast.parse(source).body[0]
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    return return_shape(node)


@pytest.mark.parametrize(
    "source, arities, single, opaque",
    [
        ("def f():\n    return 1, 2\n", {2}, False, False),
        ("def f(x):\n    if x:\n        return 1, 2\n    return 1, 2, 3\n", {2, 3}, False, False),
        ("def f():\n    pass\n", set(), True, False),  # no return at all: None, a single value
        ("def f():\n    return\n", set(), True, False),
        # Optional[tuple]: an early ``return None`` guard does not make it "a single value".
        ("def f(x):\n    if x:\n        return None\n    return 1, 2\n", {2}, False, False),
        ("def f(x):\n    return x + 1\n", set(), True, False),
        ("def f():\n    return Output(1)\n", set(), True, False),  # a constructed object
        ("def f():\n    return mod.Output(1)\n", set(), True, False),
        ("def f():\n    return compute()\n", set(), False, True),  # a call result: unknown
        ("def f(x):\n    return x\n", set(), False, True),
        ("def f(x):\n    return (*x, 1)\n", set(), False, True),  # starred: length unknown
        ("def f():\n    yield 1\n", set(), True, True),  # a generator (no return statement)
        (
            "def f():\n    def g():\n        return 1, 2\n    return g\n",
            set(),
            False,
            True,
        ),  # nested not counted
    ],
)
def test_return_classification(source, arities, single, opaque) -> None:
    assert shape(source) == ReturnShape(frozenset(arities), single, opaque)


def test_trailing_return_none_next_to_a_tuple_is_also_optional_tuple() -> None:
    """The Optional[tuple] rule must not depend on which return comes first."""
    assert shape("def f(x):\n    if x:\n        return 1, 2\n    return None\n") == ReturnShape(
        frozenset({2}), False, False
    )


def test_render_and_unpacking_verdicts() -> None:
    both = ReturnShape(frozenset({3, 2}), True, True)
    assert both.render() == "a 2-tuple or a 3-tuple or a single value or values of unknown shape"
    assert ReturnShape(frozenset(), False, False).render() == "nothing"
    assert both.unpacks_to(2) is True
    assert ReturnShape(frozenset({2}), True, False).unpacks_to(3) is False
    assert ReturnShape(frozenset({2}), False, True).unpacks_to(3) is None
    assert ReturnShape(frozenset(), False, False).unpacks_to(2) is None


def test_three_way_merges_and_counts_conflicts() -> None:
    base = "a\nb\nc\n"
    clean = three_way(base, "a\nb\nc\nmine\n", "A\nb\nc\n")
    assert clean.text == "A\nb\nc\nmine\n" and clean.conflicts == 0 and clean.clean
    clash = three_way(base, "a\nX\nc\n", "a\nY\nc\n", labels=("ours", "old", "new"))
    assert clash.conflicts == 1 and not clash.clean
    assert clash.text == "a\n<<<<<<< ours\nX\n=======\nY\n>>>>>>> new\nc\n"


@pytest.mark.parametrize("which", ["base", "ours", "theirs"])
def test_three_way_refuses_text_without_final_newline(which) -> None:
    texts = {"base": "a\n", "ours": "a\n", "theirs": "a\n", which: "a"}
    with pytest.raises(ValueError, match=f"^{which} text must end with a newline$"):
        three_way(texts["base"], texts["ours"], texts["theirs"])
