"""The exact errors and log lines of ArcticPatch: each names the patch, the target and the fix.

A plugin author meets these when vLLM changes under a patch; the message is the only
guidance they get, so its wording is part of the contract. No vLLM needed.
"""

from __future__ import annotations

import re
import types

import pytest

from arctic_inference.patching import ArcticPatch, AttributeChange, PatchError, PatchRecord


def make_target() -> type:
    class Target:
        def greet(self, who: str) -> str:
            return f"hello {who}"

    return Target


def fullmatch(exc: pytest.ExceptionInfo[BaseException], expected: str) -> None:
    assert str(exc.value) == expected


def test_missing_alias_message_names_every_missing_attribute_and_the_fix() -> None:
    Target = make_target()

    class StalePatch(ArcticPatch[Target]):
        _orig_one = Target.greet
        _orig_two = Target.greet

    with pytest.raises(PatchError) as info:
        StalePatch.apply()
    where = f"{__name__}.test_missing_alias_message_names_every_missing_attribute_and_the_fix.<locals>.StalePatch"
    target = f"{__name__}.make_target.<locals>.Target"
    fullmatch(
        info,
        f"Patch {where} keeps _orig_one, _orig_two but its target {target} has no attribute "
        "'one', 'two'. The target changed (renamed or removed upstream): update the alias to "
        "the attribute that exists now, or drop the wrapper.",
    )


def test_zero_arg_super_message_names_the_method_and_the_explicit_form() -> None:
    class Base:
        def run(self) -> str:
            return "base"

    class Child(Base):
        pass

    class SuperPatch(ArcticPatch[Child]):
        def run(self) -> str:
            return super().run() + "!"

    with pytest.raises(PatchError) as info:
        SuperPatch.apply()
    assert str(info.value).endswith(
        "SuperPatch.run uses zero-argument super() or __class__, which would bind to the patch class "
        "instead of the target. Call the parent explicitly: super(TargetClass, self).method(...)."
    )
    assert "run" not in vars(Child), "a refused patch changes nothing"


@pytest.mark.parametrize("wrap", [staticmethod, classmethod])
def test_zero_arg_super_is_found_inside_static_and_class_methods(wrap) -> None:
    Target = make_target()

    class Outer:  # a method that reads __class__ has the cell super() needs
        def f(*args):
            return __class__

    class CellPatch(ArcticPatch[Target]):
        helper = wrap(Outer.f)

    with pytest.raises(PatchError, match="zero-argument super"):
        CellPatch.apply()


def test_zero_arg_super_is_found_inside_a_property() -> None:
    Target = make_target()

    class Outer:
        def f(self):
            return __class__

    class PropPatch(ArcticPatch[Target]):
        value = property(Outer.f)

    with pytest.raises(PatchError, match="zero-argument super"):
        PropPatch.apply()


def test_classmethod_on_a_module_message_names_the_attribute() -> None:
    module = types.ModuleType("arctic_test_errors_module")

    class ModPatch(ArcticPatch[module]):
        @classmethod
        def build(cls) -> None:
            return None

    with pytest.raises(PatchError) as info:
        ModPatch.apply()
    assert str(info.value).endswith(
        "ModPatch defines 'build' as a classmethod, but its target arctic_test_errors_module is a "
        "module. Write a plain function instead."
    )


def test_subscript_errors_say_what_to_write() -> None:
    with pytest.raises(TypeError) as info:
        ArcticPatch[42]  # type: ignore[misc]
    fullmatch(
        info,
        "ArcticPatch[...] takes the class or module to patch, got 42 (int). Import the target "
        "and write ArcticPatch[TheClass] or ArcticPatch[the_module].",
    )
    Target = make_target()

    class Bound(ArcticPatch[Target]):
        pass

    with pytest.raises(TypeError) as info:
        Bound[Target]  # type: ignore[misc]
    fullmatch(
        info,
        "test_subscript_errors_say_what_to_write.<locals>.Bound is already bound to a target; "
        "subscript ArcticPatch itself, e.g. class MyPatch(ArcticPatch[Target]).",
    )
    with pytest.raises(PatchError) as info:
        ArcticPatch.apply()
    fullmatch(
        info,
        "ArcticPatch is not a concrete patch; define class MyPatch(ArcticPatch[Target]) and "
        "call MyPatch.apply().",
    )


def test_bound_base_lives_in_the_patching_module_and_is_named_for_its_target() -> None:
    Target = make_target()
    base = ArcticPatch[Target]
    assert base.__module__ == "arctic_inference.patching"
    assert base.__qualname__ == f"ArcticPatch[{__name__}.make_target.<locals>.Target]"


def test_revert_refuses_when_an_added_attribute_was_deleted_since() -> None:
    Target = make_target()

    class FlagPatch(ArcticPatch[Target]):
        flag = None  # an added attribute whose value is None

    FlagPatch.apply()
    del Target.flag  # someone took it out again
    with pytest.raises(PatchError) as info:
        FlagPatch.revert()
    assert re.search(
        r"Cannot revert .*FlagPatch: flag on .*Target changed after it was applied "
        r"\(a later patch wraps it\?\)\. Revert later patches first\.$",
        str(info.value),
    )
    Target.flag = None  # put back what the patch installed: now it reverts cleanly
    assert FlagPatch.revert() is True
    assert "flag" not in vars(Target)


def test_record_keeps_aliases_the_patch_class_and_descriptor_kinds() -> None:
    Target = make_target()

    class KindsPatch(ArcticPatch[Target]):
        _orig_greet = Target.greet
        LIMIT = 3

        def greet(self, who: str) -> str:
            return KindsPatch._orig_greet(self, who)

    record = KindsPatch.apply()
    try:
        assert record.aliases == ("greet",)
        assert record.patch_class is KindsPatch
        assert {a.name: a.kind for a in record.attributes} == {
            "LIMIT": "value",
            "greet": "function",
        }
        assert record.patch.endswith("<locals>.KindsPatch")
        assert (
            record.describe()
            == f"{record.patch} -> {record.target} (replaced: greet; added: LIMIT)"
        )
    finally:
        KindsPatch.revert()


def test_describe_lists_several_names_and_says_nothing_when_empty() -> None:
    rec = PatchRecord("P", "m", "pkg.T", "class", (), ())
    assert rec.describe() == "P -> pkg.T (nothing)"

    rec = PatchRecord(
        "P",
        "m",
        "pkg.T",
        "class",
        (
            AttributeChange("a", "replaced", "function"),
            AttributeChange("b", "replaced", "value"),
            AttributeChange("c", "added", "value"),
            AttributeChange("d", "added", "property"),
        ),
        (),
    )
    assert rec.describe() == "P -> pkg.T (replaced: a, b; added: c, d)"
