"""When an instance attribute's kind of value counts as changed (RK304).

A kind is what the assignment builds: ``call`` (by callee), ``literal`` (by type) or
``None``. Only a change between two known, disjoint sets of kinds is reported; a value
copied from a parameter or read from elsewhere says nothing about its type.
"""

from __future__ import annotations

from rebasekit.analysis.attrs import Provision, kind_changed
from rebasekit.analysis.shapes import AttrValue


def provision(*values: tuple[str, str]) -> Provision:
    return Provision(
        [
            (f"Runner.m{i}", AttrValue(kind, detail, i, f"src{i}"))
            for i, (kind, detail) in enumerate(values)
        ],
        None,
    )


BUFFER = ("call", "CpuGpuBuffer")
ZEROS = ("call", "torch.zeros")
NONE = ("none", "None")


def test_buffer_replaced_by_tensor_is_a_change() -> None:
    assert kind_changed(provision(BUFFER), provision(ZEROS)) is True


def test_same_constructor_is_no_change() -> None:
    assert kind_changed(provision(BUFFER), provision(BUFFER)) is False


def test_one_shared_kind_among_several_is_no_change() -> None:
    assert kind_changed(provision(BUFFER, ZEROS), provision(ZEROS)) is False
    assert kind_changed(provision(ZEROS), provision(("literal", "int"), ZEROS)) is False


def test_literal_type_change_is_a_change() -> None:
    assert kind_changed(provision(("literal", "int")), provision(("literal", "str"))) is True


def test_none_placeholders_are_ignored() -> None:
    # ``self.x = None`` then set later: the placeholder is not the attribute's kind.
    assert kind_changed(provision(NONE, BUFFER), provision(BUFFER)) is False
    assert kind_changed(provision(BUFFER), provision(NONE, BUFFER)) is False
    assert kind_changed(provision(NONE, BUFFER), provision(NONE, ZEROS)) is True
    # Only placeholders on one side: nothing known to compare with.
    assert kind_changed(provision(NONE), provision(ZEROS)) is False
    assert kind_changed(provision(ZEROS), provision(NONE)) is False


def test_unknown_kinds_never_count_as_a_change() -> None:
    assert kind_changed(provision(("param", "size")), provision(ZEROS)) is False
    assert kind_changed(provision(BUFFER), provision(("attr", "other.buf"))) is False
    assert kind_changed(provision(("expr", "")), provision(("expr", ""))) is False


def test_provision_kinds_and_provided() -> None:
    p = provision(BUFFER, ("param", "n"), NONE, ("literal", "list"))
    assert p.kinds() == {BUFFER, NONE, ("literal", "list")}
    assert p.provided is True
    assert Provision([], None).provided is False
