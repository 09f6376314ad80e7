"""Model classes copied from upstream rather than subclassed, and the helpers they hold.

A model plugin writes ``class MyLlamaForLM(nn.Module)`` as a copy of upstream's
``LlamaForLM``: it builds upstream layers in ``__init__`` (``self.proc = Processor(...)``)
and calls them later. Three drift kinds reach it:

* RK301 through an attribute: ``self.proc.step(x, meta)`` no longer binds;
* RK314: ``self.proc(head, h, meta)`` still binds, but ``meta`` now fills another
  parameter (calling an ``nn.Module`` instance runs its ``forward``);
* RK406: the copy's ``compute(self, h, meta)`` matched upstream's at OLD, and upstream
  dropped ``meta``.

Each has a near-identical case that must stay quiet.
"""

from __future__ import annotations

import pytest
from synth_helpers import line_of, plugin, upstream

from rebasekit.analysis.mirrorclasses import named_after
from rebasekit.findings import Severity
from rebasekit.scan import scan_plugin

LAYERS_OLD = """\
from torch import nn


class Processor(nn.Module):
    def forward(self, head, hidden, meta=None, bias=None):
        return hidden

    def step(self, x, meta):
        return x


class Helper:
    def __call__(self, x, meta=None, scale=1):
        return x
"""
LAYERS_NEW = """\
from torch import nn


class Processor(nn.Module):
    def forward(self, head, hidden, bias=None):
        return hidden

    def step(self, x):
        return x


class Helper:
    def __call__(self, x, meta=None, scale=1):
        return x
"""
MODEL_OLD = """\
from torch import nn


class LlamaForLM(nn.Module):
    def __init__(self, config):
        self.config = config

    def forward(self, ids, positions):
        return ids

    def compute(self, hidden, meta):
        return hidden

    def load(self, weights):
        return weights
"""
MODEL_NEW = MODEL_OLD.replace("def compute(self, hidden, meta):", "def compute(self, hidden):")
PLUGIN = """\
from torch import nn

from vllm.layers import Helper, Processor
from vllm.model import LlamaForLM


class LlamaFastForLM(nn.Module):
    def __init__(self, config):
        self.proc = Processor()
        self.helper = Helper()
        self.other = Processor() if config else None

    def forward(self, ids, positions):
        return ids

    def compute(self, hidden, meta):
        out = self.proc(self.head, hidden, meta)
        self.proc(self.head, hidden, bias=meta)
        self.helper(hidden, meta)
        self.other(self.head, hidden, meta)
        return self.proc.step(out, meta)

    def load(self, weights):
        return weights


class LlamaTunedForLM(nn.Module):
    def forward(self, ids, positions):
        return ids

    def compute(self, hidden):
        return hidden

    def load(self, weights):
        return weights


class Cache(nn.Module):
    def forward(self, ids, positions):
        return ids

    def compute(self, hidden, meta):  # not named after an upstream class
        return hidden

    def load(self, weights):
        return weights
"""
PATCHING = """\
from typing import Generic, TypeVar

from vllm.layers import Helper

T = TypeVar("T")


class Patch(Generic[T]):
    pass


class HelperPatch(Patch[Helper]):
    scale = 2
"""


@pytest.fixture
def findings(tmp_path_factory):
    root = tmp_path_factory.mktemp("copies")
    old = upstream(root / "old", "1.0.0", {"layers.py": LAYERS_OLD, "model.py": MODEL_OLD})
    new = upstream(root / "new", "1.1.0", {"layers.py": LAYERS_NEW, "model.py": MODEL_NEW})
    pkg = plugin(root / "plug", {"m.py": PLUGIN, "patching.py": PATCHING})
    result = scan_plugin(str(new), old=str(old), plugin=pkg, patch_bases=["Patch"])
    assert result.complete, result.degradations
    return result.findings


def of(findings, code: str) -> list:
    return [f for f in findings if f.code == code]


def test_call_through_an_attribute_binds_against_the_held_class(findings) -> None:
    (f,) = of(findings, "RK301")
    assert f.plugin.symbol == "LlamaFastForLM.compute"
    assert f.plugin.line == line_of(PLUGIN, "return self.proc.step(out, meta)")
    assert f.details["callee"] == "vllm.layers.Processor.step"
    assert f.message.startswith(
        "call through self.proc.step to vllm.layers.Processor.step no longer binds at 1.1.0: "
        "too many positional arguments"
    )


def test_positional_argument_into_a_removed_parameter_is_named(findings) -> None:
    # by keyword (bias=meta), Helper (unchanged) and self.other (two kinds of value): quiet
    (f,) = of(findings, "RK314")
    assert f.severity is Severity.WARNING
    assert f.plugin.line == line_of(PLUGIN, "out = self.proc(self.head, hidden, meta)")
    assert f.upstream.symbol == "vllm.layers.Processor.forward"
    assert (f.details["param"], f.details["lands_in"], f.details["position"]) == (
        "meta",
        "bias",
        2,
    )
    assert f.message == (
        "LlamaFastForLM.compute passes argument 3 of vllm.layers.Processor.forward(...) by "
        "position into meta, which upstream removed between 1.0.0 and 1.1.0 "
        "((head, hidden, meta=None, bias=None) -> (head, hidden, bias=None)); that argument "
        "now fills bias"
    )


def test_copied_class_method_follows_the_upstream_signature_change(findings) -> None:
    # LlamaTunedForLM.compute never had meta; Cache is not named after an upstream class
    (f,) = of(findings, "RK406")
    assert f.plugin.symbol == "LlamaFastForLM.compute"
    assert f.plugin.line == line_of(PLUGIN, "def compute(self, hidden, meta):")
    assert f.upstream.symbol == "vllm.model.LlamaForLM.compute"
    assert (f.details["param"], f.details["change"]) == ("meta", "removed")
    assert f.message == (
        "LlamaFastForLM.compute copies vllm.model.LlamaForLM.compute with its 1.0.0 parameters "
        "(self, hidden, meta); upstream removed parameter meta by 1.1.0 ((self, hidden))"
    )


def test_a_copy_is_named_after_its_upstream_class_with_words_inserted() -> None:
    assert named_after("MistralFastForCausalLM", "MistralForCausalLM")
    assert named_after("MistralForCausalLMWithCache", "MistralForCausalLM")
    assert named_after("MistralForCausalLM", "MistralForCausalLM")
    assert not named_after("MistralForCausalLM", "MistralFastForCausalLM")  # words removed
    assert not named_after("FastMistralCausalLM", "MistralForCausalLM")  # two runs changed
    assert not named_after("FastModel", "Model")  # a one-word name says too little


def test_a_quiet_class_renamed_after_the_upstream_class_is_followed(tmp_path) -> None:
    renamed = PLUGIN.replace("class Cache(nn.Module):", "class LlamaCacheForLM(nn.Module):")
    old = upstream(tmp_path / "old", "1.0.0", {"layers.py": LAYERS_OLD, "model.py": MODEL_OLD})
    new = upstream(tmp_path / "new", "1.1.0", {"layers.py": LAYERS_NEW, "model.py": MODEL_NEW})
    pkg = plugin(tmp_path / "plug", {"m.py": renamed, "patching.py": PATCHING})
    found = scan_plugin(str(new), old=str(old), plugin=pkg, patch_bases=["Patch"]).findings
    # once named after LlamaForLM, the class that was quiet as Cache is followed too
    assert sorted(f.plugin.symbol for f in of(found, "RK406")) == [
        "LlamaCacheForLM.compute",
        "LlamaFastForLM.compute",
    ]


def test_an_override_forwarding_its_own_parameter_is_left_to_rk218(tmp_path) -> None:
    runner_old = (
        "class Runner:\n    def propose(self, tokens, meta, hidden=None):\n        return tokens\n"
    )
    runner_new = runner_old.replace("tokens, meta,", "tokens, common,")
    patch = (
        "from vllm.runner import Runner\nfrom tp.patching import Patch\n\n\n"
        "class RunnerPatch(Patch[Runner]):\n    _orig_propose = Runner.propose\n\n"
        "    def propose(self, tokens, meta, hidden=None):\n"
        "        self._orig_propose(tokens, self.meta)\n"
        "        return self._orig_propose(tokens, meta, hidden=hidden)\n"
    )
    old = upstream(tmp_path / "old", "1.0.0", {"runner.py": runner_old, **_LAYERS_OLD})
    new = upstream(tmp_path / "new", "1.1.0", {"runner.py": runner_new, **_LAYERS_NEW})
    pkg = plugin(tmp_path / "plug", {"r.py": patch, "patching.py": PATCHING})
    found = scan_plugin(str(new), old=str(old), plugin=pkg, patch_bases=["Patch"]).findings
    forwarded = line_of(patch, "return self._orig_propose(tokens, meta, hidden=hidden)")
    assert [f.plugin.line for f in of(found, "RK218")] == [forwarded]
    # the call passing another value (self.meta) into the removed parameter is RK314's
    assert [f.plugin.line for f in of(found, "RK314")] == [
        line_of(patch, "self._orig_propose(tokens, self.meta)")
    ]


_LAYERS_OLD = {"layers.py": LAYERS_OLD}
_LAYERS_NEW = {"layers.py": LAYERS_NEW}


def test_attribute_calls_are_kept_per_index_and_corpus(tmp_path) -> None:
    from rebasekit.analysis.attrcalls import _attribute_calls, attribute_calls
    from rebasekit.corpus import extract_corpus
    from rebasekit.index.cache import FactsCache
    from rebasekit.index.code_index import CodeIndex
    from rebasekit.upstream.spec import open_tree

    new = upstream(tmp_path / "new", "1.1.0", {"layers.py": LAYERS_NEW, "model.py": MODEL_NEW})
    pkg = plugin(tmp_path / "plug", {"m.py": PLUGIN, "patching.py": PATCHING})
    corpus = extract_corpus(pkg, ("Patch",), "vllm")
    index = CodeIndex(open_tree(str(new)), FactsCache(None))
    first = attribute_calls(corpus, index)
    assert first and attribute_calls(corpus, index) is first  # asked again: the same answer
    fresh = CodeIndex(open_tree(str(new)), FactsCache(None))
    assert attribute_calls(corpus, fresh) is not first  # another index computes its own
    # Another plugin (without the model file) on the same index must not get the old answer.
    other = extract_corpus(
        plugin(tmp_path / "plug2", {"patching.py": PATCHING}), ("Patch",), "vllm"
    )
    assert attribute_calls(other, index) == [] == _attribute_calls(other, index)
    assert [s.call.callee for s in first] == [
        s.call.callee for s in _attribute_calls(corpus, fresh)
    ]
