"""runbook: test map derived from a real test suite, phases, risks, recorded results.

The project, its tests and two upstream trees are written on the fly; findings come from
the real scan between the two trees.
"""

from __future__ import annotations

import json

import pytest
from cli_runner import StrictRunner as CliRunner
from runbook_project import PLUGIN_SKELETON, write_tree

from rebasekit.cli import app
from rebasekit.findings import Finding, Location, Severity
from rebasekit.runbook.risks import CPU, E2E, SERVING, SMOKE, classify

RUNNER_OLD = "class Runner:\n    def execute_model(self, batch):\n        return batch\n"
RUNNER_NEW = (
    "class Runner:\n    def execute_model(self, batch, intermediate):\n        return batch\n"
)

FILES = {
    **PLUGIN_SKELETON,
    "plug/runner_patch.py": """
        from arctic_inference.patching import ArcticPatch
        from vllm.worker.runner import Runner

        class RunnerPatch(ArcticPatch[Runner]):
            def execute_model(self, batch):
                return batch
    """,
    "plug/untested.py": "X = 1\n",
    "tests/test_runner_patch.py": """
        from plug.runner_patch import RunnerPatch

        def test_patch_applies():
            assert RunnerPatch
    """,
    "tests/test_misc.py": """
        import pytest

        def test_env(monkeypatch):
            monkeypatch.setattr("plug.plugin.load", lambda: None)
    """,
    "tests/gpu/test_e2e_model_runner.py": """
        import pytest
        from vllm import LLM, SamplingParams
        pytestmark = pytest.mark.gpu

        def test_generate_execute_model():
            llm = LLM("/models/tiny")
            llm.collective_rpc(lambda worker: worker.model_runner)
            llm.generate(["hi"], SamplingParams(max_tokens=4))
    """,
    "tests/gpu/test_kernels.py": """
        import pytest

        @pytest.mark.gpu
        def test_kernel():
            pass
    """,
}


@pytest.fixture
def project(tmp_path):
    write_tree(tmp_path / "proj", FILES)
    for name, runner in (("old", RUNNER_OLD), ("new", RUNNER_NEW)):
        write_tree(
            tmp_path / name,
            {
                "vllm/__init__.py": "",
                "vllm/worker/__init__.py": "",
                "vllm/worker/runner.py": runner,
            },
        )
    return tmp_path


def invoke(project, *extra):
    out = project / "RB.md"
    result = CliRunner().invoke(
        app,
        [
            "runbook",
            "--from",
            str(project / "old"),
            "--to",
            str(project / "new"),
            "--project",
            str(project / "proj"),
            "--write",
            str(out),
            "--env",
            "PLUG_ENABLED=1",
            *extra,
        ],
    )
    return result, (out.read_text() if out.exists() else "")


def test_runbook_maps_findings_and_files_to_tests(project):
    result, text = invoke(project)
    assert result.exit_code == 0, result.output
    row = next(
        line for line in text.splitlines() if line.startswith("| RK") and "runner_patch.py" in line
    )
    assert "e2e:model-runner" in row
    assert "`tests/test_runner_patch.py` (imports RunnerPatch)" in row
    assert "tests/gpu/test_e2e_model_runner.py" in row  # a test named after execute_model
    file_row = next(
        line for line in text.splitlines() if line.startswith("| plug/runner_patch.py |")
    )
    assert "imports plug.runner_patch" in file_row
    phases = [
        line.split("|")[2].strip()
        for line in text.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip().isdigit()
    ]
    assert phases == ["smoke", "cpu-unit", "gpu-unit", "e2e:engine", "e2e:model-runner", "serving"]
    assert 'PLUG_ENABLED=1 python -c "from plug.plugin import load; load()"' in text
    assert "python -m pytest -q -m gpu tests/gpu/test_kernels.py" in text
    assert "python -m pytest -q -m gpu tests/gpu/test_e2e_model_runner.py" in text
    assert "Likely breaks at: first prefill" in text


def test_changed_since_adds_untested_files(project):
    import git

    repo = git.Repo.init(project / "proj")
    repo.index.add(["plug/untested.py", "plug/plugin.py"])
    repo.index.commit("base", author_date="1700000000 +0000", commit_date="1700000000 +0000")
    (project / "proj" / "plug" / "untested.py").write_text("X = 2\n")
    (project / "proj" / "plug" / "plugin.py").write_text("def load():\n    return 1\n")
    result, text = invoke(project, "--changed-since", "HEAD")
    assert result.exit_code == 0, result.output
    assert "| plug/untested.py | file |  | **no test found** |" in text
    assert "`tests/test_misc.py` (names plug.plugin in a string)" in text


def test_record_fills_results_and_sets_exit_code(project):
    results = project / "results.json"
    results.write_text(
        json.dumps(
            {
                "phases": {
                    "smoke": "pass",
                    "e2e:model-runner": {"status": "fail", "note": "prefill crash"},
                }
            }
        )
    )
    result, text = invoke(project, "--record", str(results))
    assert result.exit_code == 1
    assert "| 1 | smoke | 0 | ✅ pass |" in text and "❌ fail: prefill crash" in text
    assert "| 3 | gpu-unit | 0 | not run |" in text


@pytest.mark.parametrize("content", ['{"nope": "pass"}', '{"smoke": "great"}', "[1", "[]"])
def test_bad_results_exit_2(project, content):
    results = project / "results.json"
    results.write_text(content)
    result, _ = invoke(project, "--record", str(results))
    assert result.exit_code == 2 and "error:" in result.output and "Traceback" not in result.output


def test_bad_trees_exit_2(project):
    result = CliRunner().invoke(
        app,
        [
            "runbook",
            "--from",
            "nowhere-x",
            "--to",
            str(project / "new"),
            "--project",
            str(project / "proj"),
        ],
    )
    assert result.exit_code == 2 and "Traceback" not in result.output


def finding(code, plugin_symbol, upstream_symbol, path="plug/x.py"):
    return Finding(
        code,
        Severity.ERROR,
        "m",
        Location(path, 1, None, plugin_symbol),
        Location("vllm/x.py", 1, None, upstream_symbol),
    )


@pytest.mark.parametrize(
    "f, phase, feature",
    [
        (finding("RK101", None, "vllm.v1.spec_decode.eagle"), SMOKE, "spec-decode"),
        (
            finding("RK210", "P.propose", "vllm.v1.spec_decode.eagle.EagleProposer.propose"),
            E2E,
            "spec-decode",
        ),
        (
            finding(
                "RK210",
                "P._prepare_inputs",
                "vllm.v1.worker.gpu_model_runner.GPUModelRunner._prepare_inputs",
            ),
            E2E,
            "model-runner",
        ),
        (finding("RK302", "P.forward", "vllm.v1.sample.sampler.Sampler.forward"), E2E, "sampling"),
        (
            finding(
                "RK210",
                "P.get_kv_cache_shape",
                "vllm.attention.backends.flash_attn.FlashAttentionBackend",
            ),
            E2E,
            "attention",
        ),
        (
            finding("RK211", "P.add_cli_args", "vllm.engine.arg_utils.EngineArgs.add_cli_args"),
            SERVING,
            "serving",
        ),
        (finding("RK215", "P.f", "vllm.utils.misc.f"), CPU, "general"),
    ],
)
def test_finding_classification(f, phase, feature):
    risk = classify(f)
    assert (risk.phase, risk.feature) == (phase, feature)
