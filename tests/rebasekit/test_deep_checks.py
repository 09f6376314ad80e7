"""RK3xx/RK4xx on the synthetic fixture: one positive and one negative case per check."""

from __future__ import annotations

import pytest
from deep_helpers import NEW, OLD, PLUGIN

from rebasekit.findings import Drift
from rebasekit.scan import scan_plugin


@pytest.fixture  # per test: bench/mutation credits a fixture's calls to the test that ran it
def findings():
    result = scan_plugin(str(NEW), old=str(OLD), plugin=PLUGIN, select=["RK3", "RK4"])
    return result.findings


def _by(findings, code):
    return [f for f in findings if f.code == code]


def _subjects(findings, code):
    return {f.details.get("subject", "") for f in _by(findings, code)}


def test_rk301_call_binding(findings):
    msgs = {f.details["callee"]: f for f in _by(findings, "RK301")}
    # positives: new required arg (constructor + super() delegation), removed keyword
    assert msgs["vllm.layers.quant.Fp8Method"].details["problems"] == [
        "missing required argument 'layer'"
    ]
    assert "'dtype'" in msgs["vllm.layers.linear.LinearBase.__init__"].message
    assert msgs["vllm.layers.quant.pick_method"].details["problems"] == [
        "unexpected keyword argument 'strict'"
    ]
    # the constructor call moved upstream from __init__ to create_weights: say where
    assert "Linear.create_weights" in msgs["vllm.layers.quant.Fp8Method"].details["moved_to"]
    # negatives: split_rows only gained an optional arg; the _orig_ __init__ call still binds
    assert "vllm.layers.quant.split_rows" not in msgs
    assert "vllm.worker.runner.Runner.__init__" not in msgs
    assert all(f.drift is Drift.NEW for f in msgs.values())


def test_rk302_return_shape(findings):
    found = _by(findings, "RK302")
    assert [f.details["callee"] for f in found] == [
        "vllm.layers.quant.split_scales"
    ]  # not split_rows
    assert "single value" in found[0].message and "2-tuple" in found[0].message


def test_rk303_rk304_instance_attributes(findings):
    gone = {f.details["attribute"] for f in _by(findings, "RK303")}
    kind = {f.details["attribute"]: f for f in _by(findings, "RK304")}
    assert gone == {"block_size"}
    assert set(kind) == {"positions"}
    assert "CpuGpuBuffer" in kind["positions"].details["old_value"]
    assert "torch.zeros" in kind["positions"].details["new_value"]
    assert ".gpu" in kind["positions"].message
    # negatives: max_len and seq_lens are assigned the same way at both pins
    assert not ({"max_len", "seq_lens"} & (gone | set(kind)))


def test_rk401_parallel_implementation(findings):
    found = _by(findings, "RK401")
    assert [f.details["twin"] for f in found] == [
        "vllm.worker.v2.runner.Runner"
    ]  # Scheduler has no twin
    sel = found[0].details["selectors"][0]
    assert sel["path"] == "vllm/worker/worker.py" and sel["condition"] == "self.use_v2_runner"
    assert sel["env_vars"] == ["VLLM_USE_V2_RUNNER"]
    assert sel["constants"]["V2_RUNNER_ARCHITECTURES"] == ["LlamaForCausalLM", "QwenForCausalLM"]
    assert found[0].drift is Drift.NEW


def test_rk402_mirrored_bodies(findings):
    found = {f.plugin.symbol: f for f in _by(findings, "RK402")}
    assert found["RunnerPatch.execute"].details["mirrors"] is True
    assert (
        "-            return None" not in found["RunnerPatch.execute"].details["diff"]
    )  # upstream diff, not ours
    assert "+        return []" in found["RunnerPatch.execute"].details["diff"]
    assert "RunnerPatch.finish" in found
    assert "RunnerPatch.prepare" not in found  # copied, but upstream did not change it
    assert "SchedulerPatch.schedule" not in found


def test_rk403_rk404_forks(findings):
    forks = {f.plugin.path: f for f in _by(findings, "RK403")}
    assert set(forks) == {
        "deepplug/mathx_fork.py"
    }  # text_fork.py (pyproject-declared) is unchanged upstream
    changes = {c["qualname"]: c for c in forks["deepplug/mathx_fork.py"].details["changes"]}
    assert changes["round_up"]["forked"] is True and changes["align"] == {
        "qualname": "align",
        "status": "added",
        "forked": False,
    }
    assert "cdiv" not in changes
    undeclared = _by(findings, "RK404")
    assert [f.plugin.path for f in undeclared] == [
        "deepplug/tokfork.py"
    ]  # misc.py shares names, not bodies
    assert undeclared[0].details["declaration"] == "# rebasekit: fork-of vllm/utils/tokens.py@1.0.0"


def test_same_tree_has_no_deep_drift():
    result = scan_plugin(str(OLD), old=str(OLD), plugin=PLUGIN, select=["RK3", "RK4"])
    # at the pin the plugin was written for, only the undeclared fork remains
    assert {f.code for f in result.findings} == {"RK404"}


def _scan_with_patch(tmp_path, module: str, patch: str, body: str, select: list[str]):
    """The fixture plugin plus one more patch of ``Runner`` (``patch`` with ``body``), scanned."""
    from deep_helpers import copy_fixtures

    fx = copy_fixtures(tmp_path)
    (fx / "plugin" / "deepplug" / f"{module}.py").write_text(
        "from arctic_inference.patching import ArcticPatch\n"
        "from vllm.worker.runner import Runner\n\n\n"
        f"class {patch}(ArcticPatch[Runner]):\n"
        "    _orig_execute = Runner.execute\n\n"
        "    def execute(self, batch):\n"
        f"        return {body}\n"
    )
    return scan_plugin(
        str(fx / "upstream_new"),
        old=str(fx / "upstream_old"),
        plugin=fx / "plugin" / "deepplug",
        select=select,
    ).findings


def test_rk401_is_reported_for_every_patch_of_the_bypassed_class(tmp_path):
    findings = _scan_with_patch(
        tmp_path,
        "runner_extra",
        "RunnerExtraPatch",
        "RunnerExtraPatch._orig_execute(self, batch)",
        ["RK401"],
    )
    found = {f.details["patch"]: f for f in _by(findings, "RK401")}
    # Each patch is routed around on its own; one finding per class would hide the second.
    assert set(found) == {"RunnerPatch", "RunnerExtraPatch"}
    assert found["RunnerExtraPatch"].plugin.path.endswith("runner_extra.py")
    assert "execute" in found["RunnerExtraPatch"].message


def test_rk303_says_gone_only_for_what_the_base_pin_had(tmp_path):
    from rebasekit.findings import Severity

    findings = _scan_with_patch(
        tmp_path,
        "runner_reads",
        "RunnerReadsPatch",
        "self.never_upstream + RunnerReadsPatch._orig_execute(self, batch)",
        ["RK303"],
    )
    found = {f.details["attribute"]: f for f in _by(findings, "RK303")}
    assert set(found) == {"block_size", "never_upstream"}
    gone, never = found["block_size"], found["never_upstream"]
    assert gone.severity is Severity.ERROR and "no longer assigns" in gone.message
    assert never.severity is Severity.WARNING and "no longer" not in never.message
    assert "not defined upstream" in never.message and never.details["also_missing_at"]
