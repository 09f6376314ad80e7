"""Which parameters a call to an upstream symbol binds against (or None: unknowable)."""

from __future__ import annotations

import pytest
from synth_helpers import upstream

from rebasekit.analysis.defnodes import call_params, is_dataclass_like
from rebasekit.load import as_index

MODELS = """\
import dataclasses
from typing import NamedTuple, TypedDict

import attr
import attrs
import pydantic


@dataclasses.dataclass
class Dc:
    a: int


@attr.define
class AttrDefine:
    a: int


@attrs.frozen
class AttrsFrozen:
    a: int


class Nt(NamedTuple):
    a: int


class Model(pydantic.BaseModel):
    a: int


class Td(TypedDict):
    a: int


class Plain:
    def __init__(self, a, b=1):
        self.a = a


class NoInit:
    pass


class Child(Plain):
    pass


class Tools:
    @staticmethod
    def static(x, y):
        return x

    @classmethod
    def make(cls, n):
        return cls()

    def method(self, k):
        return k


def free(p, q):
    return p
"""


@pytest.fixture
def index(tmp_path):
    return as_index(str(upstream(tmp_path, "1.0.0", {"models.py": MODELS})))


def names(found) -> list[str]:
    assert found is not None
    return [p.name for p in found[0]]


@pytest.mark.parametrize("cls", ["Dc", "AttrDefine", "AttrsFrozen", "Nt", "Model", "Td"])
def test_generated_init_has_unknown_parameters(index, cls: str) -> None:
    sym = index.resolve(f"vllm.models.{cls}")
    assert is_dataclass_like(sym) is True
    assert call_params(index, sym, bound=False) is None


def test_class_binds_against_its_init_without_self(index) -> None:
    for cls in ("Plain", "Child"):  # Child inherits Plain's __init__
        sym = index.resolve(f"vllm.models.{cls}")
        assert is_dataclass_like(sym) is False
        found = call_params(index, sym, bound=False)
        assert names(found) == ["a", "b"]
        assert found[1].qualname == "vllm.models.Plain.__init__"
    # No __init__ written anywhere in the tree: nothing to bind against.
    assert call_params(index, index.resolve("vllm.models.NoInit"), bound=False) is None


def test_methods_static_class_and_plain(index) -> None:
    def params(name: str, **kw) -> list[str]:
        return names(call_params(index, index.resolve(f"vllm.models.Tools.{name}"), **kw))

    assert params("static", bound=True) == ["x", "y"]
    assert params("make", bound=False) == ["n"]
    assert params("make", bound=False, raw_function=True) == ["cls", "n"]
    assert params("method", bound=False) == ["self", "k"]  # Tools.method(obj, k)
    assert params("method", bound=True) == ["k"]
    # A module-level function has no receiver to drop, bound or not.
    assert names(call_params(index, index.resolve("vllm.models.free"), bound=True)) == ["p", "q"]
