"""RK21x on one synthetic target: what is compared, what is not, and what the finding carries."""

from __future__ import annotations

import pytest
from synth_helpers import line_of, plugin, upstream

from rebasekit.findings import Location
from rebasekit.scan import scan_plugin

PATCHING = "from typing import Generic, TypeVar\n\nT = TypeVar('T')\n\n\nclass Patch(Generic[T]):\n    pass\n"
UPSTREAM = """\
class Engine:
    @staticmethod
    def pick(a, b):
        return a

    @property
    def size(self):
        return 1

    def step(self, batch, budget):
        return batch

    def run(self, a, b):
        return a
"""
PLUGIN = """\
from vllm.engine import Engine
from tp.patching import Patch


class EnginePatch(Patch[Engine]):
    @staticmethod
    def pick(x, b):
        return x

    def size(self):
        return 2

    def step(self, *args, **kwargs):
        return args

    def run(self, a, c):
        return a
"""


@pytest.fixture
def by_attr(tmp_path):
    tree = upstream(tmp_path / "new", "1.1.0", {"engine.py": UPSTREAM})
    pkg = plugin(tmp_path / "plug", {"m.py": PLUGIN, "patching.py": PATCHING})
    result = scan_plugin(str(tree), plugin=pkg, patch_bases=["Patch"], select=["RK21"])
    out: dict[str, list] = {}
    for f in result.findings:
        out.setdefault(f.plugin.symbol, []).append(f)
    return out


def test_only_the_differing_overrides_are_reported(by_attr) -> None:
    # step's (self, *args, **kwargs) accepts whatever upstream takes.
    assert sorted(by_attr) == ["EnginePatch.pick", "EnginePatch.run", "EnginePatch.size"]


def test_staticmethod_keeps_its_first_parameter_in_the_comparison(by_attr) -> None:
    (f,) = by_attr["EnginePatch.pick"]
    assert f.code == "RK212"
    assert f.plugin == Location(
        "tp/m.py", line_of(PLUGIN, "def pick(x, b):"), None, "EnginePatch.pick"
    )
    assert f.message.startswith("EnginePatch.pick vs vllm.engine.Engine.pick: ")
    assert "'a'" in f.message and "'x'" in f.message


def test_method_overriding_a_property_is_a_kind_mismatch(by_attr) -> None:
    (f,) = by_attr["EnginePatch.size"]
    assert f.code == "RK216"
    assert f.message == (
        "size is a method in EnginePatch but a property upstream (vllm.engine.Engine.size)"
    )
    assert f.suggestion == "make the override a property or retarget it"


def test_signature_finding_carries_both_signatures(by_attr) -> None:
    (f,) = by_attr["EnginePatch.run"]
    assert f.upstream == Location(
        "vllm/engine.py", line_of(UPSTREAM, "def run(self, a, b):"), None, "vllm.engine.Engine.run"
    )
    assert f.details["upstream_signature"] == "(self, a, b)"
    assert f.details["override_signature"] == "(self, a, c)"
    assert f.suggestion == "match the upstream signature (self, a, b)"
