"""ArcticPatch mechanics on plain classes and modules (no vLLM needed)."""

from __future__ import annotations

import types

import pytest

from arctic_inference.patching import (
    ArcticPatch,
    PatchError,
    applied_patches,
    is_applied,
)


def make_target() -> type:
    class Target:
        label = "plain"

        def greet(self, who: str) -> str:
            return f"hello {who}"

        @staticmethod
        def twice(x: int) -> int:
            return 2 * x

        @classmethod
        def make(cls) -> Target:
            return cls()

    return Target


def test_wrapper_reaches_existing_instances_and_is_idempotent() -> None:
    Target = make_target()
    before = Target()

    class GreetPatch(ArcticPatch[Target]):
        _orig_greet = Target.greet

        def greet(self, who: str) -> str:
            return GreetPatch._orig_greet(self, who).upper()

    first = GreetPatch.apply()
    second = GreetPatch.apply()
    assert second is first
    # One wrap only: a double wrap would still be upper-case, so check the
    # installed function is the patch's and the original is the stock one.
    assert Target.__dict__["greet"] is GreetPatch.__dict__["greet"]
    assert GreetPatch._orig_greet(before, "x") == "hello x"
    assert before.greet("ann") == "HELLO ANN"
    assert Target().greet("bo") == "HELLO BO"
    assert not hasattr(Target, "_orig_greet"), "aliases must not be copied"
    assert is_applied(GreetPatch)


def test_reimported_copy_of_a_patch_does_not_wrap_twice() -> None:
    Target = make_target()
    calls: list[str] = []

    def define() -> type[ArcticPatch]:
        class CountPatch(ArcticPatch[Target]):
            _orig_greet = Target.greet

            def greet(self, who: str) -> str:
                calls.append(who)
                return CountPatch._orig_greet(self, who)

        return CountPatch

    first, copy = define(), define()
    assert first is not copy
    first.apply()
    copy.apply()  # same module + qualname: treated as already applied
    Target().greet("z")
    assert calls == ["z"]


def test_registry_records_replaced_and_added_attributes() -> None:
    Target = make_target()

    class MixPatch(ArcticPatch[Target]):
        label = "patched"

        def extra(self) -> int:
            return 7

    record = MixPatch.apply()
    assert record in applied_patches()
    assert record.patch.endswith("MixPatch")
    assert record.patch_module == __name__
    assert record.target == f"{Target.__module__}.{Target.__qualname__}"
    assert record.target_kind == "class"
    assert record.replaced == ("label",)
    assert record.added == ("extra",)
    assert record.target_object is Target
    assert "replaced: label" in record.describe() and "added: extra" in record.describe()


def test_descriptor_kinds_survive_the_copy() -> None:
    Target = make_target()

    class KindsPatch(ArcticPatch[Target]):
        @staticmethod
        def twice(x: int) -> int:
            return 3 * x

        @classmethod
        def make(cls) -> str:
            return cls.__name__

        @property
        def size(self) -> int:
            return 42

    record = KindsPatch.apply()
    assert isinstance(Target.__dict__["twice"], staticmethod)
    assert isinstance(Target.__dict__["make"], classmethod)
    assert isinstance(Target.__dict__["size"], property)
    assert Target().twice(5) == 15
    assert Target.make() == "Target", "classmethod must bind to the target, not the patch"

    class Sub(Target):
        pass

    assert Sub.make() == "Sub"
    assert Target().size == 42
    kinds = {c.name: c.kind for c in record.attributes}
    assert kinds == {"twice": "staticmethod", "make": "classmethod", "size": "property"}


def test_alias_naming_a_missing_attribute_fails_at_apply_time() -> None:
    Target = make_target()

    class StalePatch(ArcticPatch[Target]):
        _orig_renamed_upstream = Target.greet

        def renamed_upstream(self) -> None:
            return None

    with pytest.raises(PatchError) as info:
        StalePatch.apply()
    message = str(info.value)
    assert "StalePatch" in message
    assert Target.__qualname__ in message
    assert "'renamed_upstream'" in message
    assert not hasattr(Target, "renamed_upstream"), "a failed patch must change nothing"
    assert not is_applied(StalePatch)


def test_module_target() -> None:
    module = types.ModuleType("arctic_test_module")
    module.scale = lambda x: x * 10  # type: ignore[attr-defined]
    module.UNIT = "m"  # type: ignore[attr-defined]

    class ModulePatch(ArcticPatch[module]):
        _orig_scale = module.scale  # type: ignore[attr-defined]
        UNIT = "cm"

        @staticmethod
        def scale(x: int) -> int:
            return ModulePatch._orig_scale(x) + 1

        def offset(x: int) -> int:  # plain function: a module global
            return x - 1

    record = ModulePatch.apply()
    assert record.target_kind == "module" and record.target == "arctic_test_module"
    assert module.scale(2) == 21  # type: ignore[attr-defined]
    assert module.offset(2) == 1  # type: ignore[attr-defined]
    assert module.UNIT == "cm"  # type: ignore[attr-defined]
    assert isinstance(module.__dict__["scale"], types.FunctionType)
    assert record.replaced == ("UNIT", "scale") and record.added == ("offset",)
    assert ArcticPatch[module] is ArcticPatch[module]


def test_property_on_a_module_target_is_refused() -> None:
    module = types.ModuleType("arctic_test_module_2")

    class BadModulePatch(ArcticPatch[module]):
        @property
        def value(self) -> int:
            return 1

    with pytest.raises(PatchError, match="is a module"):
        BadModulePatch.apply()


def test_zero_argument_super_is_refused() -> None:
    class Base:
        def run(self) -> str:
            return "base"

    class Child(Base):
        pass

    class SuperPatch(ArcticPatch[Child]):
        def run(self) -> str:
            return super().run() + "!"

    with pytest.raises(PatchError, match=r"super\(\)"):
        SuperPatch.apply()


def test_bad_subscripts_and_unbound_patch_give_clear_errors() -> None:
    with pytest.raises(TypeError, match="class or module"):
        ArcticPatch["not a class"]  # type: ignore[misc]
    Target = make_target()

    class Bound(ArcticPatch[Target]):
        pass

    with pytest.raises(TypeError, match="already bound"):
        Bound[Target]  # type: ignore[misc]
    with pytest.raises(PatchError, match="not a concrete patch"):
        ArcticPatch.apply()
    with pytest.raises(PatchError, match="not a concrete patch"):
        ArcticPatch[Target].apply()


# --- revert (test-only) ----------------------------------------------------------


def test_revert_restores_descriptors_and_removes_added_attributes() -> None:
    class Base:
        def inherited(self) -> str:
            return "base"

    class Target(make_target(), Base):  # type: ignore[misc]
        pass

    Parent = Target.__mro__[1]
    own_before = dict(vars(Parent))

    class FullPatch(ArcticPatch[Parent]):
        _orig_greet = Parent.greet
        label = "patched"

        def greet(self, who: str) -> str:
            return FullPatch._orig_greet(self, who) + "!"

        @staticmethod
        def twice(x: int) -> int:
            return 0

        @classmethod
        def make(cls) -> str:
            return "patched"

        @property
        def size(self) -> int:
            return 1

        def extra(self) -> int:
            return 7

    class InheritedPatch(ArcticPatch[Target]):
        def inherited(self) -> str:
            return "patched"

    FullPatch.apply()
    InheritedPatch.apply()
    obj = Target()
    assert (obj.greet("a"), obj.twice(2), Target.make(), obj.size, obj.extra()) == (
        "hello a!",
        0,
        "patched",
        1,
        7,
    )
    assert obj.inherited() == "patched" and "inherited" in vars(Target)

    assert InheritedPatch.revert() is True
    assert "inherited" not in vars(Target), "a replaced inherited name must be inherited again"
    assert obj.inherited() == "base"
    assert FullPatch.revert() is True

    assert dict(vars(Parent)) == own_before  # the very same objects, nothing extra
    assert isinstance(vars(Parent)["twice"], staticmethod)
    assert isinstance(vars(Parent)["make"], classmethod)
    assert not hasattr(Parent, "size") and not hasattr(obj, "extra")
    assert (obj.greet("a"), obj.twice(2), type(Target.make()), obj.label) == (
        "hello a",
        4,
        Target,
        "plain",
    )
    assert not is_applied(FullPatch) and not is_applied(InheritedPatch)
    assert all(r.patch_class not in (FullPatch, InheritedPatch) for r in applied_patches())
    assert FullPatch.revert() is False  # nothing left to undo

    FullPatch.apply()  # the registry forgot it: applying again works
    assert obj.greet("b") == "hello b!"
    FullPatch.revert()


def test_revert_on_a_module_target() -> None:
    module = types.ModuleType("arctic_test_module_3")
    module.scale = lambda x: x * 10  # type: ignore[attr-defined]
    original = module.scale  # type: ignore[attr-defined]

    class ModuleRevertPatch(ArcticPatch[module]):
        _orig_scale = module.scale  # type: ignore[attr-defined]

        @staticmethod
        def scale(x: int) -> int:
            return ModuleRevertPatch._orig_scale(x) + 1

        NEW_GLOBAL = 5

    ModuleRevertPatch.apply()
    assert module.scale(1) == 11 and module.NEW_GLOBAL == 5  # type: ignore[attr-defined]
    assert ModuleRevertPatch.revert()
    assert module.scale is original  # type: ignore[attr-defined]
    assert not hasattr(module, "NEW_GLOBAL")


def test_revert_refuses_while_a_later_patch_wraps_the_same_attribute() -> None:
    Target = make_target()

    class Inner(ArcticPatch[Target]):
        _orig_greet = Target.greet

        def greet(self, who: str) -> str:
            return Inner._orig_greet(self, who) + "1"

    Inner.apply()

    class Outer(ArcticPatch[Target]):
        _orig_greet = Target.greet

        def greet(self, who: str) -> str:
            return Outer._orig_greet(self, who) + "2"

    Outer.apply()
    with pytest.raises(PatchError, match="Revert later patches first"):
        Inner.revert()
    assert Target().greet("x") == "hello x12", "a refused revert changes nothing"
    assert is_applied(Inner)
    Outer.revert()
    Inner.revert()
    assert Target().greet("x") == "hello x"
