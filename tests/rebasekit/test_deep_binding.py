"""Call-shape binding against parameter lists, checked against Python's own binder."""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from rebasekit.analysis.binding import CallShape, bind, drop_bound, params_of, shape_of_call
from rebasekit.analysis.shapes import return_shape


def _func(src: str) -> ast.FunctionDef:
    node = ast.parse(src).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def test_missing_required_argument_is_reported_by_name():
    params = drop_bound(params_of(_func("def __init__(self, quant_config, layer): pass")))
    result = bind(shape_of_call(ast.parse("Fp8Method(cfg)").body[0].value), params)
    assert not result.ok and result.missing == ["layer"]


def test_removed_keyword_and_extra_positional():
    params = params_of(_func("def pick(name): pass"))
    assert bind(CallShape(1, ("strict",)), params).unexpected == ["strict"]
    assert bind(CallShape(2), params).too_many == 1


def test_star_arguments_make_uncertain_checks_silent():
    params = params_of(_func("def f(a, b, *, c): pass"))
    assert bind(CallShape(0, (), star_args=True, star_kwargs=True), params).ok
    assert not bind(CallShape(0, (), star_args=True), params).ok  # keyword-only c still missing


NAMES = ["a", "b", "c", "d"]


@st.composite
def signatures(draw):
    n_pos = draw(st.integers(0, 3))
    n_kw = draw(st.integers(0, 2))
    names = NAMES[: n_pos + n_kw]
    pos, kwonly = names[:n_pos], names[n_pos:]
    n_defaults = draw(st.integers(0, n_pos))
    parts = [p if i < n_pos - n_defaults else f"{p}=0" for i, p in enumerate(pos)]
    if draw(st.booleans()):
        parts.append("*args")
    elif kwonly:
        parts.append("*")
    parts += [k if draw(st.booleans()) else f"{k}=0" for k in kwonly]
    if draw(st.booleans()):
        parts.append("**kw")
    return f"def f({', '.join(parts)}): pass"


@settings(max_examples=300, deadline=None)
@given(
    signatures(),
    st.integers(0, 4),
    st.lists(st.sampled_from(NAMES + ["zz"]), unique=True, max_size=3),
)
def test_binding_agrees_with_python(src, n_positional, keywords):
    namespace: dict = {}
    exec(src, namespace)
    call = f"f({', '.join(['0'] * n_positional + [k + '=0' for k in keywords])})"
    try:
        eval(call, namespace)
        python_ok = True
    except TypeError:
        python_ok = False
    ours = bind(CallShape(n_positional, tuple(keywords)), params_of(_func(src)))
    assert ours.ok == python_ok, (src, call, ours.problems)


def test_return_shapes():
    pair = return_shape(_func("def f(x):\n    if x:\n        return None\n    return x, 1"))
    single = return_shape(_func("def f(x):\n    return Out(x, 1)"))
    opaque = return_shape(_func("def f(x):\n    return g(x)"))
    assert pair.unpacks_to(2) is True and pair.unpacks_to(3) is False
    assert single.unpacks_to(2) is False
    assert opaque.unpacks_to(2) is None


def _shape(call: str) -> CallShape:
    node = ast.parse(call).body[0].value
    assert isinstance(node, ast.Call)
    return shape_of_call(node)


def test_shape_of_call_counts_what_the_call_site_passes():
    assert _shape("f(1, 2, k=3)") == CallShape(2, ("k",), False, False)
    assert _shape("f(1, *xs, k=3)") == CallShape(1, ("k",), True, False)
    assert _shape("f(**kw)") == CallShape(0, (), False, True)
    assert _shape("f(a, k=1, **kw, j=2)") == CallShape(1, ("k", "j"), False, True)


def test_bind_takes_a_signature_as_well_as_a_parameter_list():
    from rebasekit.index.visitor import signature_of

    sig = signature_of(_func("def f(a, b): pass"))
    assert bind(CallShape(1), sig).missing == ["b"]


def test_star_args_cannot_fill_keyword_only_parameters_after_positional_ones():
    # *xs may fill a (positional-only) and b; only c is certainly missing.
    params = params_of(_func("def f(a, /, b, *, c, d=1): pass"))
    result = bind(CallShape(0, (), star_args=True), params)
    assert result.missing == ["c"]
    assert result.problems == ["missing required argument 'c'"]
    # With c passed by keyword nothing is certainly missing.
    assert bind(CallShape(0, ("c",), star_args=True), params).ok


def test_missing_arguments_are_all_named_in_one_problem():
    result = bind(CallShape(0), params_of(_func("def f(a, b=2, *, c): pass")))
    assert result.missing == ["a", "c"]
    assert result.problems == ["missing required arguments 'a', 'c'"]
