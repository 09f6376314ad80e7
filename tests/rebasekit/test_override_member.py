"""What an override replaces: a method along the MRO, or a function of a patched module."""

from __future__ import annotations

from synth_helpers import upstream

from rebasekit.analysis.overrides import override_member
from rebasekit.load import as_index

MOD = """\
LIMIT = 3


def helper(x):
    return x


class Base:
    def run(self):
        return 1


class Child(Base):
    size = 2
"""


def test_member_of_a_class_or_a_module(tmp_path) -> None:
    index = as_index(str(upstream(tmp_path, "1.0.0", {"mod.py": MOD})))
    found = override_member(index, None, "helper", target="vllm.mod")
    assert found is not None and found.qualname == "vllm.mod.helper"
    inherited = override_member(index, None, "run", target="vllm.mod.Child")
    assert inherited is not None and inherited.qualname == "vllm.mod.Base.run"
    # Only functions are replaced by an override; other names and targets give nothing.
    assert override_member(index, None, "LIMIT", target="vllm.mod") is None
    assert override_member(index, None, "size", target="vllm.mod.Child") is None
    assert override_member(index, None, "x", target="vllm.mod.helper") is None
    assert override_member(index, None, "run", target="vllm.nowhere.Child") is None
    assert override_member(index, None, "run") is None
