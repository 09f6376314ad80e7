"""Deep checks against real vLLM releases (fetched through rebasekit's own tree cache)."""

from __future__ import annotations

import textwrap

import pytest
from cli_runner import StrictRunner as CliRunner

from rebasekit.analysis.overrides import symbol_definition
from rebasekit.analysis.parallel import find_twins
from rebasekit.cli import app
from rebasekit.findings import Drift
from rebasekit.load import as_index
from rebasekit.scan import scan_plugin

pytestmark = pytest.mark.network
V1_RUNNER = "vllm.v1.worker.gpu_model_runner.GPUModelRunner"


@pytest.fixture(scope="module")
def indexes():
    return {v: as_index(v) for v in ("0.24.0", "0.26.0", "0.27.0")}


@pytest.mark.parametrize("version", ["0.24.0", "0.26.0", "0.27.0"])
def test_v2_model_runner_is_a_twin_selected_by_use_v2_model_runner(indexes, version):
    twins = {t.qualname: t for t in find_twins(indexes[version], V1_RUNNER)}
    twin = twins["vllm.v1.worker.gpu.model_runner.GPUModelRunner"]
    assert twin.relpath == "vllm/v1/worker/gpu/model_runner.py"
    sel = next(s for s in twin.selectors if s.relpath == "vllm/v1/worker/gpu_worker.py")
    assert sel.condition == "self.use_v2_model_runner" and sel.branch == "if"
    assert "VLLM_USE_V2_MODEL_RUNNER" in sel.env_vars
    assert sel.resolved_at and sel.resolved_at.startswith("vllm/config/vllm.py")


def test_copied_override_of_real_method(tmp_path, indexes):
    """A plugin that copies Worker.sleep at 0.26.0 and patches the V1 runner."""
    sleep = symbol_definition(indexes["0.26.0"].resolve("vllm.v1.worker.gpu_worker.Worker.sleep"))
    pkg = tmp_path / "realplug"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "patches.py").write_text(
        "from arctic_inference.patching import ArcticPatch\n"
        "from vllm.v1.worker.gpu_worker import Worker\n"
        "from vllm.v1.worker.gpu_model_runner import GPUModelRunner\n\n\n"
        "class WorkerPatch(ArcticPatch[Worker]):\n" + textwrap.indent(sleep.source, "    ") + "\n\n"
        "class RunnerPatch(ArcticPatch[GPUModelRunner]):\n"
        "    def execute_model(self, *args, **kwargs):\n        return None\n"
    )
    result = scan_plugin(
        indexes["0.27.0"],
        old=indexes["0.26.0"],
        plugin=pkg,
        patch_bases=["ArcticPatch"],
        select=["RK4"],
    )
    mirrored = {f.plugin.symbol: f for f in result.findings if f.code == "RK402"}
    assert mirrored["WorkerPatch.sleep"].details["mirrors"] is True
    assert "@@" in mirrored["WorkerPatch.sleep"].details["diff"]
    if "RunnerPatch.execute_model" in mirrored:  # a stub, not a copy
        assert mirrored["RunnerPatch.execute_model"].details["mirrors"] is False
    by_code = {f.code: f for f in result.findings}
    assert by_code["RK401"].details["twin"] == "vllm.v1.worker.gpu.model_runner.GPUModelRunner"
    assert by_code["RK401"].drift is Drift.PREEXISTING  # the V2 runner already existed at 0.26.0


def test_diff_method_on_real_trees():
    out = CliRunner().invoke(
        app,
        [
            "diff-method",
            "vllm.v1.worker.gpu_worker.Worker.sleep",
            "--from",
            "0.26.0",
            "--to",
            "0.27.0",
            "--unified",
        ],
    )
    assert out.exit_code == 1 and out.output.startswith("--- 0.26.0: vllm/v1/worker/gpu_worker.py")


def test_project_lock_is_current():
    """The committed rebasekit.lock.json matches the pinned vLLM and the plugin as it is now."""
    out = CliRunner().invoke(app, ["corpus", "verify"])
    assert out.exit_code == 0, (
        f"stale or missing lock; regenerate with `rebasekit corpus lock`:\n{out.output}"
    )


def test_drift_between_two_pins_is_new_even_when_the_lock_pins_a_third(indexes):
    """``--from 0.24.0 --to 0.26.0`` while rebasekit.lock.json pins 0.26.0.

    Body drift between OLD and NEW is new by definition. The OLD-side scan that decides
    "preexisting" must not measure OLD against the lock's pin, or every 0.24.0 -> 0.26.0
    change would be reported as already present at 0.24.0.
    """
    result = scan_plugin(indexes["0.26.0"], old=indexes["0.24.0"], select=["RK402"])
    assert result.findings, (
        "the plugin wraps methods whose bodies changed between 0.24.0 and 0.26.0"
    )
    assert {f.drift for f in result.findings} == {Drift.NEW}
