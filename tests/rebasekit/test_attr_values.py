"""How ``self.X = value`` assignments are described (the facts behind RK304's messages)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from rebasekit.analysis.shapes import AttrValue, describe_value, return_shape, self_assignments

INIT = """\
def __init__(me, size, cfg, *, scale):
    me.buf = None
    me.buf = torch.zeros(size)
    me.count: int = 0
    me.count += 1
    me.a, me.b = size, cfg.size
    me.c, me.d = pair()
    [me.e, me.f] = scale, 2.5
    self.not_me = 1
    other.x = 2
    me.factory = make()()
"""


def func(src: str) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(src)).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def line(needle: str) -> int:
    return next(i for i, text in enumerate(INIT.splitlines(), 1) if needle in text)


def test_assignments_are_keyed_by_attribute_in_line_order() -> None:
    got = self_assignments(func(INIT))
    # The first parameter is the receiver, whatever it is called.
    assert sorted(got) == ["a", "b", "buf", "c", "count", "d", "e", "f", "factory"]
    # The walk visits later statements first; the values come back in source order.
    assert got["buf"] == [
        AttrValue("none", "None", line("me.buf = None"), "None"),
        AttrValue("call", "torch.zeros", line("torch.zeros"), "torch.zeros(size)"),
    ]
    assert got["count"] == [
        AttrValue("literal", "int", line("me.count: int"), "0"),
        AttrValue("literal", "int", line("me.count +="), "1"),
    ]


def test_tuple_assignments_pair_targets_with_values() -> None:
    got = self_assignments(func(INIT))
    assert got["a"] == [AttrValue("param", "size", line("me.a, me.b"), "size")]
    assert got["b"] == [AttrValue("attr", "cfg.size", line("me.a, me.b"), "cfg.size")]
    assert got["e"] == [AttrValue("param", "scale", line("[me.e, me.f]"), "scale")]
    assert got["f"] == [AttrValue("literal", "float", line("[me.e, me.f]"), "2.5")]


def test_unpacking_a_call_leaves_each_target_of_unknown_value() -> None:
    got = self_assignments(func(INIT))
    at = line("me.c, me.d = pair()")
    assert got["c"] == [AttrValue("expr", "", at, "")]
    assert got["d"] == [AttrValue("expr", "", at, "")]


@pytest.mark.parametrize(
    ("expr", "kind", "detail"),
    [
        ("mod.Buffer(n)", "call", "mod.Buffer"),
        ("make()()", "call", "make()"),  # no dotted name: the callee's source
        ("None", "none", "None"),
        ("'s'", "literal", "str"),
        ("True", "literal", "bool"),
        ("[1]", "literal", "list"),
        ("[i for i in n]", "literal", "list"),
        ("{}", "literal", "dict"),
        ("{k: 1 for k in n}", "literal", "dict"),
        ("{1}", "literal", "set"),
        ("{i for i in n}", "literal", "set"),
        ("(1, 2)", "literal", "tuple"),
        ("n", "param", "n"),
        ("other", "expr", "other"),  # a name that is no parameter
        ("cfg.model.size", "attr", "cfg.model.size"),
        ("n + 1", "expr", "n + 1"),
    ],
)
def test_describe_value_kinds(expr: str, kind: str, detail: str) -> None:
    value = ast.parse("\n\n" + expr, mode="eval").body  # on line 3
    assert describe_value(value, {"n"}) == AttrValue(kind, detail, 3, expr)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (AttrValue("call", "torch.zeros", 1, "torch.zeros(3)"), "a torch.zeros(...) value"),
        (AttrValue("literal", "dict", 1, "{}"), "a dict literal"),
        (AttrValue("none", "None", 1, "None"), "None"),
        (AttrValue("param", "size", 1, "size"), "size"),
        (AttrValue("attr", "cfg.size", 1, "cfg.size"), "cfg.size"),
    ],
)
def test_render_says_what_was_assigned(value: AttrValue, text: str) -> None:
    assert value.render() == text


def test_return_of_a_dotted_constructor_is_a_single_value() -> None:
    shape = return_shape(func("def f(x):\n    return outputs.base.Result(x)\n"))
    assert (shape.single, shape.opaque, shape.arities) == (True, False, frozenset())
    # A lower-case callee at the end of the dotted name is a plain call: opaque.
    shape = return_shape(func("def f(x):\n    return Outputs.base.make(x)\n"))
    assert (shape.single, shape.opaque) == (False, True)
