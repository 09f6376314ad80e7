"""Registering checks: codes must be defined; names default to the function's dotted path."""

from __future__ import annotations

import sys
import types

import pytest

from rebasekit import checks
from rebasekit.checks import registry


@pytest.fixture
def fresh(monkeypatch):
    table: dict = {}
    monkeypatch.setattr(registry, "_CHECKS", table)
    return table


def test_undefined_code_is_refused_with_where_to_define_it(fresh) -> None:
    with pytest.raises(ValueError) as err:
        registry.register_check(codes=["RK101", "RK999"])
    assert str(err.value) == (
        "check uses undefined codes ['RK999']; define them in rebasekit/codes.py"
    )
    assert fresh == {}


def test_check_is_keyed_by_its_module_and_name_unless_named(fresh) -> None:
    def my_check(ctx):
        return []

    assert registry.register_check(codes=["RK101"])(my_check) is my_check
    registry.register_check(codes=["RK102", "RK103"], name="custom")(my_check)
    key = f"{__name__}.my_check"
    assert sorted(fresh) == sorted([key, "custom"])
    assert fresh[key] == registry.Check(key, ("RK101",), my_check)
    assert fresh["custom"].codes == ("RK102", "RK103")


def test_dotted_check_modules_are_imported_as_given(fresh, monkeypatch) -> None:
    module = types.ModuleType("tp_extra_checks")

    def extra(ctx):
        return []

    module.extra = extra
    monkeypatch.setitem(sys.modules, "tp_extra_checks.mod", module)
    monkeypatch.setattr(checks, "CHECK_MODULES", ["tp_extra_checks.mod"])
    registry.register_check(codes=["RK101"], name="extra")(extra)
    assert [c.name for c in registry.all_checks()] == ["extra"]
