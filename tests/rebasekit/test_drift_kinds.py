"""The drift kinds read from upstream's own definitions and call sites (RK217, RK218,
RK221, RK305-RK308, RK405), each on a small OLD/NEW pair with a plugin that breaks
(firing) and one written the way that still works (non-firing).
"""

from __future__ import annotations

from pathlib import Path

from synth_helpers import line_of, plugin, upstream

from rebasekit.findings import Severity
from rebasekit.scan import scan_plugin

PATCHING = """\
from typing import Generic, TypeVar

T = TypeVar("T")


class Patch(Generic[T]):
    pass
"""


def run(
    tmp_path: Path,
    old_files: dict[str, str],
    new_files: dict[str, str],
    plugin_text: str,
    code: str,
    *,
    with_old: bool = True,
):
    old = upstream(tmp_path / "old", "1.0.0", old_files)
    new = upstream(tmp_path / "new", "1.1.0", new_files)
    pkg = plugin(tmp_path / "plug", {"m.py": plugin_text, "patching.py": PATCHING})
    result = scan_plugin(
        str(new),
        old=str(old) if with_old else None,
        plugin=pkg,
        patch_bases=["Patch"],
        select=[code],
    )
    # a plugin without patch classes of the configured base is reported incomplete for
    # that alone (its assignments onto upstream names are still found as patches)
    others = [d for d in result.degradations if d.kind != "patch-bases-unmatched"]
    assert others == []
    return result.findings


# -- RK305: calls on self --------------------------------------------------------------
RUNNER_OLD = """\
class Base:
    def prepare(self, batch):
        return batch

    def old_name(self, x):
        return x + 1


class Runner(Base):
    def step(self, batch):
        return self.prepare(batch)

    def helper(self, a, b=None):
        return a
"""
RUNNER_NEW = """\
class Base:
    def prepare(self, batch, config):
        return batch

    def new_name(self, x):
        return x + 1


class Runner(Base):
    def step(self, batch):
        return self.prepare(batch, self.config)

    def helper(self, a, b=None):
        return a
"""
SELF_PLUGIN = """\
from vllm.runner import Runner
from tp.patching import Patch


class RunnerPatch(Patch[Runner]):
    def step(self, batch):
        self.helper(batch, b=1)
        self.own(batch)
        self.cache = batch
        self.prepare(batch)
        return self.old_name(batch)

    def own(self, batch):
        return batch
"""


def test_self_call_that_lost_an_argument_names_the_new_signature_and_upstream_call(tmp_path):
    found = run(
        tmp_path, {"runner.py": RUNNER_OLD}, {"runner.py": RUNNER_NEW}, SELF_PLUGIN, "RK305"
    )
    by_line = {f.plugin.line: f for f in found}
    assert sorted(by_line) == [
        line_of(SELF_PLUGIN, "self.prepare(batch)"),
        line_of(SELF_PLUGIN, "return self.old_name(batch)"),
    ]
    unbound = by_line[line_of(SELF_PLUGIN, "self.prepare(batch)")]
    assert unbound.severity is Severity.ERROR
    assert unbound.upstream.symbol == "vllm.runner.Base.prepare"
    assert unbound.message == (
        "RunnerPatch.step calls self.prepare(...), which no longer binds at 1.1.0: "
        "missing required argument 'config'; vllm.runner.Base.prepare now takes "
        "(batch, config) (at 1.0.0: (batch)); upstream calls it as "
        f"vllm/runner.py:{line_of(RUNNER_NEW, 'return self.prepare(batch, self.config)')}: "
        "self.prepare(batch, self.config)"
    )


def test_self_call_to_a_renamed_method_suggests_the_new_name(tmp_path):
    found = run(
        tmp_path, {"runner.py": RUNNER_OLD}, {"runner.py": RUNNER_NEW}, SELF_PLUGIN, "RK305"
    )
    removed = [f for f in found if f.details["state"] == "removed"]
    assert len(removed) == 1
    assert removed[0].details["renamed_to"] == "new_name"
    assert "no longer has old_name at 1.1.0" in removed[0].message


def test_self_calls_that_still_bind_are_not_reported(tmp_path):
    fixed = SELF_PLUGIN.replace("self.prepare(batch)", "self.prepare(batch, None)").replace(
        "self.old_name(batch)", "self.new_name(batch)"
    )
    assert run(tmp_path, {"runner.py": RUNNER_OLD}, {"runner.py": RUNNER_NEW}, fixed, "RK305") == []


def test_a_name_missing_at_a_single_pin_is_not_claimed_removed(tmp_path):
    # without OLD nothing says the method ever existed: it may be the plugin's own
    found = run(
        tmp_path,
        {"runner.py": RUNNER_OLD},
        {"runner.py": RUNNER_NEW},
        SELF_PLUGIN,
        "RK305",
        with_old=False,
    )
    assert [f.details["state"] for f in found] == ["unbound"]


# -- RK306: dataclass constructor keywords -----------------------------------------------
OUTPUT_OLD = """\
from dataclasses import dataclass


@dataclass
class RunnerOutput:
    req_ids: list
    finished_sending: set | None = None
"""
OUTPUT_NEW = """\
from dataclasses import dataclass, field


@dataclass
class KVOutput:
    finished_sending: set | None = None


@dataclass
class RunnerOutput:
    req_ids: list
    kv_output: KVOutput | None = None
    cache: dict = field(default_factory=dict, init=False)


def build():
    return RunnerOutput(req_ids=[], kv_output=None)
"""
DC_PLUGIN = """\
from vllm.outputs import RunnerOutput


def make(ids):
    return RunnerOutput(req_ids=ids, finished_sending=set())
"""


def test_dataclass_keyword_that_is_no_longer_a_field(tmp_path):
    found = run(
        tmp_path, {"outputs.py": OUTPUT_OLD}, {"outputs.py": OUTPUT_NEW}, DC_PLUGIN, "RK306"
    )
    assert len(found) == 1
    f = found[0]
    assert f.plugin.line == line_of(DC_PLUGIN, "return RunnerOutput(")
    assert f.upstream.symbol == "vllm.outputs.RunnerOutput"
    assert f.message == (
        "RunnerOutput(...) (vllm.outputs.RunnerOutput) passes finished_sending, no longer a "
        "field at 1.1.0; its fields are now (req_ids: list, kv_output: KVOutput | None = None) "
        "(at 1.0.0: (req_ids: list, finished_sending: set | None = None)); upstream builds it as "
        f"vllm/outputs.py:{line_of(OUTPUT_NEW, 'return RunnerOutput(')}: "
        "RunnerOutput(req_ids=[], kv_output=None)"
    )


def test_dataclass_call_with_current_fields_is_clean(tmp_path):
    fixed = DC_PLUGIN.replace("finished_sending=set()", "kv_output=None")
    assert (
        run(tmp_path, {"outputs.py": OUTPUT_OLD}, {"outputs.py": OUTPUT_NEW}, fixed, "RK306") == []
    )


def test_init_false_fields_are_not_constructor_parameters(tmp_path):
    text = DC_PLUGIN.replace("finished_sending=set()", "cache={}")
    found = run(tmp_path, {"outputs.py": OUTPUT_OLD}, {"outputs.py": OUTPUT_NEW}, text, "RK306")
    assert [f.details["fields"] for f in found] == [["cache"]]


# -- RK307: super() in plain subclasses -----------------------------------------------------
WORKER_OLD = """\
class Worker:
    def __init__(self, config, rank):
        self.config = config
"""
WORKER_NEW = """\
class Worker:
    def __init__(self, vllm_config, rank, *, is_driver):
        self.config = vllm_config


def make(cfg):
    return Worker(cfg, 0, is_driver=True)
"""
SUPER_PLUGIN = """\
from vllm.worker import Worker


class MyWorker(Worker):
    def __init__(self, config, rank):
        super().__init__(config=config, rank=rank)
"""


def test_super_init_of_a_plain_subclass_is_bound_against_the_base(tmp_path):
    found = run(
        tmp_path, {"worker.py": WORKER_OLD}, {"worker.py": WORKER_NEW}, SUPER_PLUGIN, "RK307"
    )
    assert len(found) == 1
    f = found[0]
    assert f.plugin.line == line_of(SUPER_PLUGIN, "super().__init__(config=config, rank=rank)")
    assert f.upstream.symbol == "vllm.worker.Worker.__init__"
    assert "unexpected keyword argument 'config'" in f.message
    assert "missing required arguments 'vllm_config', 'is_driver'" in f.message
    assert f.details["old_signature"] == "(config, rank)"
    assert f.details["upstream_call"].endswith("Worker(cfg, 0, is_driver=True)")


def test_super_init_that_binds_is_clean(tmp_path):
    fixed = SUPER_PLUGIN.replace(
        "super().__init__(config=config, rank=rank)",
        "super().__init__(vllm_config=config, rank=rank, is_driver=False)",
    )
    assert run(tmp_path, {"worker.py": WORKER_OLD}, {"worker.py": WORKER_NEW}, fixed, "RK307") == []


# -- RK308: vllm.envs ---------------------------------------------------------------------
ENVS_OLD = """\
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    VLLM_USE_V1: bool = True
    VLLM_OLD_FLAG: bool = False

environment_variables = {
    "VLLM_USE_V1": lambda: True,
    "VLLM_OLD_FLAG": lambda: False,
}


def __getattr__(name):
    return environment_variables[name]()
"""
ENVS_NEW = """\
environment_variables: dict = {
    "VLLM_USE_V1": lambda: True,
    "VLLM_NEW_FLAG": lambda: False,
}


def __getattr__(name):
    return environment_variables[name]()
"""
ENVS_PLUGIN = """\
import vllm.envs as envs
from vllm import envs as envs2

envs.VLLM_MINE = 1


def flags():
    if hasattr(envs2, "VLLM_PROBED"):
        pass
    return envs.VLLM_USE_V1, envs2.VLLM_OLD_FLAG, envs.VLLM_MINE
"""


def test_envs_attribute_gone_from_the_registry(tmp_path):
    found = run(tmp_path, {"envs.py": ENVS_OLD}, {"envs.py": ENVS_NEW}, ENVS_PLUGIN, "RK308")
    assert [(f.plugin.line, f.details["name"]) for f in found] == [
        (line_of(ENVS_PLUGIN, "return envs.VLLM_USE_V1"), "VLLM_OLD_FLAG")
    ]
    assert found[0].message == (
        "envs2.VLLM_OLD_FLAG reads vllm.envs.VLLM_OLD_FLAG, which was removed between 1.0.0 "
        "and 1.1.0"
    )


def test_envs_reads_of_defined_and_plugin_set_names_are_clean(tmp_path):
    fixed = ENVS_PLUGIN.replace("envs2.VLLM_OLD_FLAG", "envs2.VLLM_NEW_FLAG")
    assert run(tmp_path, {"envs.py": ENVS_OLD}, {"envs.py": ENVS_NEW}, fixed, "RK308") == []


def test_envs_type_checking_annotations_count_as_defined(tmp_path):
    # the old shape: annotations under TYPE_CHECKING, read at the old tree
    text = ENVS_PLUGIN.replace("envs2.VLLM_OLD_FLAG", "envs2.VLLM_USE_V1")
    assert run(tmp_path, {"envs.py": ENVS_NEW}, {"envs.py": ENVS_OLD}, text, "RK308") == []


# -- RK221: captures outside patch classes ---------------------------------------------------
CAPTURE_PLUGIN = """\
import vllm
from vllm.runner import Runner

_orig_prepare = Runner.prepare
_orig_step = Runner.step

if vllm.__version__ < "1.1.0":
    _orig_gated = Runner.prepare

try:
    _orig_tried = Runner.prepare
except AttributeError:
    _orig_tried = None


def install():
    saved = getattr(Runner, "old_name")
    return saved
"""


def test_capture_of_a_removed_attribute_at_module_level_and_in_a_function(tmp_path):
    found = run(
        tmp_path, {"runner.py": RUNNER_OLD}, {"runner.py": RUNNER_NEW}, CAPTURE_PLUGIN, "RK221"
    )
    assert sorted((f.plugin.line, f.details["target"]) for f in found) == [
        (
            line_of(CAPTURE_PLUGIN, 'saved = getattr(Runner, "old_name")'),
            "vllm.runner.Runner.old_name",
        ),
    ]
    assert found[0].details["old_tree"] == "1.0.0"
    assert found[0].details["similar"] == "new_name"


def test_captures_of_present_attributes_are_clean(tmp_path):
    fixed = CAPTURE_PLUGIN.replace('"old_name"', '"new_name"')
    assert run(tmp_path, {"runner.py": RUNNER_OLD}, {"runner.py": RUNNER_NEW}, fixed, "RK221") == []


def test_a_module_level_capture_of_a_removed_method_is_reported(tmp_path):
    text = CAPTURE_PLUGIN.replace("_orig_step = Runner.step", "_orig_old = Runner.old_name")
    found = run(tmp_path, {"runner.py": RUNNER_OLD}, {"runner.py": RUNNER_NEW}, text, "RK221")
    lines = sorted(f.plugin.line for f in found)
    assert lines[0] == line_of(text, "_orig_old = Runner.old_name")
    assert found[0].severity is Severity.ERROR


# -- RK217: upstream callers pass a keyword the override lacks --------------------------------
MR_OLD = """\
class ModelRunner:
    def load_model(self):
        pass


class Worker:
    def init(self):
        self.model_runner.load_model()
"""
MR_NEW = """\
class ModelRunner:
    def load_model(self, scale_up=False):
        pass


class Worker:
    def init(self, scale_up):
        self.model_runner.load_model(scale_up=scale_up)
"""
KW_PLUGIN = """\
from vllm.runner import ModelRunner
from tp.patching import Patch


class ModelRunnerPatch(Patch[ModelRunner]):
    def load_model(self):
        return None
"""


def test_override_missing_a_keyword_an_upstream_caller_passes(tmp_path):
    found = run(tmp_path, {"runner.py": MR_OLD}, {"runner.py": MR_NEW}, KW_PLUGIN, "RK217")
    assert len(found) == 1
    f = found[0]
    assert f.plugin.line == line_of(KW_PLUGIN, "def load_model(self):")
    call_line = line_of(MR_NEW, "self.model_runner.load_model(scale_up=scale_up)")
    assert (f.upstream.path, f.upstream.line) == ("vllm/runner.py", call_line)
    assert f.message == (
        "ModelRunnerPatch.load_model (self) does not accept keyword scale_up, which upstream "
        f"Worker.init passes at 1.1.0 (vllm/runner.py:{call_line}: "
        "self.model_runner.load_model(scale_up=scale_up))"
    )


def test_override_that_takes_the_caller_keyword_is_clean(tmp_path):
    fixed = KW_PLUGIN.replace("def load_model(self):", "def load_model(self, scale_up=False):")
    assert run(tmp_path, {"runner.py": MR_OLD}, {"runner.py": MR_NEW}, fixed, "RK217") == []


# -- RK218: positional forwarding of a removed parameter ---------------------------------------
PROP_OLD = """\
class Runner:
    def propose(self, tokens, attn_metadata, hidden=None):
        return tokens
"""
PROP_NEW = """\
class Runner:
    def propose(self, tokens, common_metadata, hidden=None):
        return tokens
"""
FWD_PLUGIN = """\
from vllm.runner import Runner
from tp.patching import Patch


class RunnerPatch(Patch[Runner]):
    _orig_propose = Runner.propose

    def propose(self, tokens, attn_metadata, hidden=None):
        return self._orig_propose(tokens, attn_metadata, hidden=hidden)
"""


def test_forwarding_a_removed_parameter_by_position(tmp_path):
    found = run(tmp_path, {"runner.py": PROP_OLD}, {"runner.py": PROP_NEW}, FWD_PLUGIN, "RK218")
    assert len(found) == 1
    f = found[0]
    assert f.plugin.line == line_of(FWD_PLUGIN, "return self._orig_propose(")
    assert (f.details["param"], f.details["position"], f.details["lands_in"]) == (
        "attn_metadata",
        1,
        "common_metadata",
    )


def test_forwarding_parameters_upstream_still_has_is_clean(tmp_path):
    assert (
        run(tmp_path, {"runner.py": PROP_OLD}, {"runner.py": PROP_OLD}, FWD_PLUGIN, "RK218") == []
    )


# -- RK405: plain subclass copying the upstream body ------------------------------------------
SAMPLER_OLD = """\
class Sampler:
    def sample(self, logits, temperature):
        logits = logits / temperature
        probs = logits.softmax(dim=-1)
        top = probs.argmax(dim=-1)
        return top
"""
SAMPLER_NEW = """\
class Sampler:
    def sample(self, logits, temperature):
        logits = logits / temperature.clamp(min=1e-5)
        probs = logits.softmax(dim=-1)
        top = probs.argmax(dim=-1)
        return top
"""
COPY_PLUGIN = """\
from vllm.sampler import Sampler


class MySampler(Sampler):
    def sample(self, logits, temperature):
        logits = logits / temperature
        probs = logits.softmax(dim=-1)
        top = probs.argmax(dim=-1)
        self.last = top
        return top
"""


def test_subclass_method_copying_a_changed_upstream_body_gets_the_diff(tmp_path):
    found = run(
        tmp_path, {"sampler.py": SAMPLER_OLD}, {"sampler.py": SAMPLER_NEW}, COPY_PLUGIN, "RK405"
    )
    assert len(found) == 1
    f = found[0]
    assert f.severity is Severity.WARNING
    assert f.plugin.line == line_of(COPY_PLUGIN, "def sample(self, logits, temperature):")
    assert "+    logits = logits / temperature.clamp(min=1e-5)" in f.details["diff"]
    assert f.details["similarity"] >= 0.6


def test_subclass_that_delegates_to_super_is_not_a_copy(tmp_path):
    delegating = COPY_PLUGIN.replace(
        "        logits = logits / temperature\n        probs = logits.softmax(dim=-1)\n"
        "        top = probs.argmax(dim=-1)\n",
        "        top = super().sample(logits, temperature)\n",
    )
    assert "super().sample" in delegating
    assert (
        run(tmp_path, {"sampler.py": SAMPLER_OLD}, {"sampler.py": SAMPLER_NEW}, delegating, "RK405")
        == []
    )


# -- guards learnt from real plugins ---------------------------------------------------------
def test_a_dataclass_the_plugin_replaces_by_assignment_is_not_checked(tmp_path):
    text = (
        "import vllm.outputs\n"
        + DC_PLUGIN
        + "\n\nclass Mine(RunnerOutput):\n    pass\n\n\nvllm.outputs.RunnerOutput = Mine\n"
    )
    assert (
        run(tmp_path, {"outputs.py": OUTPUT_OLD}, {"outputs.py": OUTPUT_NEW}, text, "RK306") == []
    )


def test_envs_read_under_try_is_handled_by_the_plugin(tmp_path):
    text = ENVS_PLUGIN.replace(
        "    return envs.VLLM_USE_V1, envs2.VLLM_OLD_FLAG, envs.VLLM_MINE",
        "    try:\n        return envs2.VLLM_OLD_FLAG\n    except AttributeError:\n        return None",
    )
    assert "try:" in text
    assert run(tmp_path, {"envs.py": ENVS_OLD}, {"envs.py": ENVS_NEW}, text, "RK308") == []


GRAND_NEW = """\
class Grand:
    def __init__(self, size, dtype):
        self.size = size


class Parent(Grand):
    def __init__(self, size):
        super().__init__(size, None)
"""
GRAND_PLUGIN = """\
from vllm.layers import Parent


class Child(Parent):
    def __init__(self, size):
        super(Parent, self).__init__(size)
"""


def test_super_with_an_upstream_class_argument_skips_that_class(tmp_path):
    # super(Parent, self) reaches Grand.__init__, which now also needs dtype
    found = run(tmp_path, {"layers.py": GRAND_NEW}, {"layers.py": GRAND_NEW}, GRAND_PLUGIN, "RK307")
    assert [(f.upstream.symbol, f.details["problems"]) for f in found] == [
        ("vllm.layers.Grand.__init__", ["missing required argument 'dtype'"])
    ]
    assert "does not bind at 1.1.0" in found[0].message


def test_caller_keywords_are_not_checked_on_plain_subclasses(tmp_path):
    text = KW_PLUGIN.replace(
        "class ModelRunnerPatch(Patch[ModelRunner]):", "class Mine(ModelRunner):"
    )
    assert run(tmp_path, {"runner.py": MR_OLD}, {"runner.py": MR_NEW}, text, "RK217") == []


GATED_PLUGIN = """\
from vllm.worker import Worker
from vllm_ascend.utils import vllm_version_is


class MyWorker(Worker):
    def __init__(self, config, rank):
        if vllm_version_is("1.0.0"):
            super().__init__(config, rank)
        else:
            super().__init__(config, rank, is_driver=False)

    def build(self):
        class Inner(Worker):
            def __init__(self, cfg):
                super().__init__(cfg, 0, is_driver=True)

        return Inner
"""


def test_super_calls_in_branches_gated_off_at_the_pin_are_skipped(tmp_path):
    # the 1.0.0 branch does not run at 1.1.0; Inner's super() is Inner's, not MyWorker's
    # (Inner is checked as a subclass of its own, and binds)
    assert (
        run(tmp_path, {"worker.py": WORKER_OLD}, {"worker.py": WORKER_NEW}, GATED_PLUGIN, "RK307")
        == []
    )


def test_the_branch_that_runs_at_the_pin_is_still_checked(tmp_path):
    text = GATED_PLUGIN.replace('vllm_version_is("1.0.0")', 'vllm_version_is("1.1.0")')
    found = run(tmp_path, {"worker.py": WORKER_OLD}, {"worker.py": WORKER_NEW}, text, "RK307")
    assert [f.plugin.line for f in found] == [line_of(text, "super().__init__(config, rank)")]
