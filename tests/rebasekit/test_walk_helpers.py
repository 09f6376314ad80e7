"""The walk helpers the checks share: the stdlib's order, with or without kept children."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from rebasekit.analysis.reachers import called_names
from rebasekit.astutil import children, keep_children, own_nodes, walk

SOURCE = """
import os

class A(Base):
    x: int = 1

    def f(self, y, *a, **k):
        z = [i for i in y if i]
        lam = lambda q: q + 1
        try:
            return os.path.join(self.x, *a, **k)
        except (OSError, ValueError) as exc:
            raise RuntimeError(str(exc)) from exc

        def inner():
            return z

    async def g(self):
        async with self.lock:
            match self.x:
                case 1 | 2:
                    pass
"""

# The forward form of the "name(" search, as the reference for its faster spelling.
_CALLED_FORWARD = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def _tree() -> ast.Module:
    return ast.parse(SOURCE)


def test_walk_and_children_keep_the_stdlib_order_with_kept_children() -> None:
    plain, kept = _tree(), _tree()
    keep_children(kept)
    for tree in (plain, kept):
        assert [ast.dump(n) for n in walk(tree)] == [ast.dump(n) for n in ast.walk(tree)]
        for node in ast.walk(tree):
            assert children(node) == list(ast.iter_child_nodes(node))


def test_kept_children_are_stored_once_and_own_nodes_leaves_them_whole() -> None:
    tree = _tree()
    keep_children(tree)
    func = tree.body[1].body[1]
    assert isinstance(func, ast.FunctionDef)
    before = list(children(func))
    assert children(func) is children(func)  # the stored list, not a new one
    names = [type(n).__name__ for n in own_nodes(func)]
    assert "Lambda" in names and "FunctionDef" in names  # the nested scopes themselves...
    assert "BinOp" not in names  # ...but not what is inside them (the lambda's q + 1)
    assert children(func) == before  # walking did not consume the stored list


def test_called_names_equal_the_forward_search() -> None:
    texts = [
        SOURCE,
        "a((",
        "9abc(x) x9(y)",
        "\u00e9abc( a\u00e9(",
        "x.abc  \n (",
        "_f(",
        "ab\u00a0(",
        "f\u2003(",
        "\u03a9( a\u03a9(",
        "",
        "(((",
        "f(g(h()))",
    ]
    texts += [p.read_text() for p in sorted(Path(ast.__file__).parent.glob("a*.py"))[:5]]
    for text in texts:
        assert called_names(text) == sorted(set(_CALLED_FORWARD.findall(text)))
    assert called_names("f(g(h()))") == ["f", "g", "h"]
