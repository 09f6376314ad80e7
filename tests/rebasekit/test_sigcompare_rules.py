"""The signature rules RK210-RK215, one behaviour per test, on signatures written as code.

Each case states what a caller written against the upstream signature would hit when
the override replaces it, so the expected diffs follow from Python's calling rules.
"""

from __future__ import annotations

import ast

from rebasekit.checks.sigcompare import SigDiff, compare, drop_receiver
from rebasekit.index.models import Param, ParamKind, Signature
from rebasekit.index.visitor import signature_of


def sig(source: str) -> Signature:
    """The signature of the one function defined in ``source`` (``def f(...): ...``)."""
    node = ast.parse(source).body[0]
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    return signature_of(node)


def codes(diffs: list[SigDiff]) -> list[tuple[str, str]]:
    return [(d.code, d.param) for d in diffs]


def test_identical_signatures_have_no_diffs() -> None:
    text = "def f(a, /, b, c=1, *args, d, e=None, **kw): ..."
    assert compare(sig(text), sig(text)) == []


def test_kwargs_absorb_a_new_keyword_parameter() -> None:
    # upstream callers may pass mode=...; the override's **kw takes it.
    assert compare(sig("def f(x, **kw): ..."), sig("def f(x, mode='a'): ...")) == []


def test_var_positional_absorbs_a_new_positional_only_parameter() -> None:
    assert compare(sig("def f(a, /, *rest): ..."), sig("def f(a, b, /): ...")) == []


def test_kwargs_do_not_absorb_a_positional_only_parameter() -> None:
    # f(1, 2) passes b by position; **kw only takes keywords, so the call fails.
    diffs = compare(sig("def f(a, /, **kw): ..."), sig("def f(a, b, /): ..."))
    assert codes(diffs) == [("RK210", "b")]
    assert diffs[0].severity is None  # required upstream: every caller passes it
    assert diffs[0].upstream_default is None
    assert (
        diffs[0].message
        == "upstream added parameter 'b' (no default: every caller passes it); the override does not accept it"
    )


def test_var_positional_does_not_absorb_a_keyword_only_parameter() -> None:
    diffs = compare(sig("def f(a, *rest): ..."), sig("def f(a, *, flag=False): ..."))
    assert codes(diffs) == [("RK210", "flag")]
    assert diffs[0].severity == "warning"  # has a default: only callers that pass it break
    assert diffs[0].upstream_default == "False"
    assert (
        diffs[0].message
        == "upstream added parameter 'flag=False' (default False); the override does not accept it"
    )


def test_added_annotated_parameter_is_rendered_with_its_annotation() -> None:
    diffs = compare(sig("def f(x): ..."), sig("def f(x, timeout: float = 1.0): ..."))
    assert codes(diffs) == [("RK210", "timeout")]
    assert "'timeout: float = 1.0' (default 1.0)" in diffs[0].message


def test_renamed_positional_is_one_rk212_not_an_add_and_a_remove() -> None:
    diffs = compare(sig("def f(n): ..."), sig("def f(size): ..."))
    assert codes(diffs) == [("RK212", "size")]
    assert diffs[0].message == "parameter 'n' is called 'size' upstream"


def test_swapped_positionals_are_an_order_change_not_renames() -> None:
    diffs = compare(sig("def f(b, a): ..."), sig("def f(a, b): ..."))
    assert codes(diffs) == [("RK213", "a,b")]
    assert diffs[0].message == "positional order is (a, b) upstream but (b, a) in the override"


def test_different_positional_sets_are_not_an_order_change() -> None:
    # 'c' replaces 'b' in second place (a rename), nothing moved.
    assert [d.code for d in compare(sig("def f(a, c): ..."), sig("def f(a, b): ..."))] == ["RK212"]


def test_override_only_parameter_with_default_is_info() -> None:
    diffs = compare(sig("def f(x, verbose=False): ..."), sig("def f(x): ..."))
    assert codes(diffs) == [("RK211", "verbose")]
    assert diffs[0].severity == "info"
    assert "harmless while it has a default" in diffs[0].message


def test_override_only_required_parameter_is_an_error() -> None:
    diffs = compare(sig("def f(x, *, token): ..."), sig("def f(x): ..."))
    assert codes(diffs) == [("RK211", "token")]
    assert diffs[0].severity == "error"
    assert (
        diffs[0].message
        == "the override requires 'token', which upstream removed; upstream callers no longer pass it"
    )


def test_upstream_kwargs_make_an_extra_keyword_parameter_fine() -> None:
    # Upstream callers may already pass 'extra' through its **kw.
    assert compare(sig("def f(x, extra=1, **kw): ..."), sig("def f(x, **kw): ...")) == []


def test_upstream_kwargs_do_not_cover_an_extra_positional_only_parameter() -> None:
    diffs = compare(sig("def f(x, y, /, **kw): ..."), sig("def f(x, /, **kw): ..."))
    assert codes(diffs) == [("RK211", "y")]


def test_dropped_var_parameters_are_rk214() -> None:
    diffs = compare(sig("def f(x): ..."), sig("def f(x, *args, **kwargs): ..."))
    assert codes(diffs) == [("RK214", "*args"), ("RK214", "**kwargs")]
    assert diffs[0].message == "upstream takes *args; the override has no *args"
    assert diffs[1].message == "upstream takes **kwargs; the override has no **kwargs"


def test_extra_var_parameters_in_the_override_are_fine() -> None:
    assert compare(sig("def f(x, *args, **kwargs): ..."), sig("def f(x): ...")) == []


def test_parameter_kind_change_is_rk214() -> None:
    diffs = compare(sig("def f(a, b): ..."), sig("def f(a, *, b): ..."))
    assert codes(diffs) == [("RK214", "b")]
    assert (
        diffs[0].message
        == "parameter 'b' is keyword-only upstream but positional-or-keyword in the override"
    )


def test_changed_default_is_rk215_with_both_values() -> None:
    diffs = compare(sig("def f(n=2): ..."), sig("def f(n=1): ..."))
    assert codes(diffs) == [("RK215", "n")]
    assert diffs[0].message == "default of 'n' is '1' upstream but '2' in the override"
    assert diffs[0].upstream_default == "1"


def test_dropped_default_reads_required() -> None:
    diffs = compare(sig("def f(n): ..."), sig("def f(n=1): ..."))
    assert diffs[0].message == "default of 'n' is '1' upstream but required in the override"
    diffs = compare(sig("def f(n=1): ..."), sig("def f(n): ..."))
    assert diffs[0].message == "default of 'n' is required upstream but '1' in the override"


def test_quote_style_of_a_default_is_not_a_change() -> None:
    upstream = Signature((sig("def f(mode='fast'): ...").params[0],))
    override = Signature((Param("mode", ParamKind.POSITIONAL_OR_KEYWORD, '"fast"'),))
    spaced = Signature((Param("mode", ParamKind.POSITIONAL_OR_KEYWORD, "'fast' "),))
    assert compare(override, upstream) == []
    assert compare(spaced, upstream) == []


def test_drop_receiver_removes_only_a_leading_positional() -> None:
    method = drop_receiver(sig("async def f(self, a, *, b=1) -> int: ..."))
    assert method.names == ["a", "b"]
    assert method.returns == "int" and method.is_async is True
    # A leading *args is not a receiver; nothing to drop from an empty list either.
    assert drop_receiver(sig("def f(*args, k): ...")).names == ["args", "k"]
    assert drop_receiver(sig("def f(): ...")).names == []


def test_each_upstream_parameter_is_judged_after_an_absorbed_one() -> None:
    # *rest takes the new positional-only b; nothing takes the new keyword c.
    diffs = compare(sig("def f(a, /, *rest): ..."), sig("def f(a, b, /, c): ..."))
    assert codes(diffs) == [("RK210", "c")]


def test_each_override_parameter_is_judged_after_a_shared_one() -> None:
    diffs = compare(sig("def f(a, extra): ..."), sig("def f(a): ..."))
    assert codes(diffs) == [("RK211", "extra")]
    assert diffs[0].severity == "error"
