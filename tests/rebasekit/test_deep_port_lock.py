"""``port``, ``diff-method`` and ``corpus lock``/``verify`` through the CLI, on fixture copies."""

from __future__ import annotations

import ast
import json

from cli_runner import StrictRunner as CliRunner
from deep_helpers import NEW, OLD, PLUGIN, copy_fixtures

from rebasekit.cli import app

runner = CliRunner()


def _run(*args):
    return runner.invoke(app, [str(a) for a in args])


def _func_block(text, cls, name):
    """The exact lines of ``cls.name`` in ``text`` (which must parse)."""
    lines = text.splitlines(keepends=True)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == name:
                    return "".join(lines[f.lineno - 1 : f.end_lineno])
    raise AssertionError(name)


def test_port_merges_clean_override_and_marks_conflict(tmp_path):
    fx = copy_fixtures(tmp_path)
    plugin = fx / "plugin" / "deepplug"
    runner_py = plugin / "runner.py"
    before = runner_py.read_text()
    untouched = [_func_block(before, "RunnerPatch", n) for n in ("__init__", "prepare")]
    result = _run(
        "port", "--to", fx / "upstream_new", "--from", fx / "upstream_old", "--plugin", plugin
    )
    assert result.exit_code == 1, result.output  # one conflict remains
    after = runner_py.read_text()
    # clean: both our change (* 2) and upstream's (return []) are in execute
    execute = after.split("def execute")[1].split("def finish")[0]
    assert "self.prepare(batch) * 2" in execute and "return []" in execute
    # conflict: finish carries markers with both sides
    assert (
        "<<<<<<< plugin\n        result.sort(key=abs)\n=======\n        result.sort(reverse=True)\n>>>>>>>"
        in after
    )
    # overrides without upstream drift are byte-identical; so is everything outside the merged defs
    for block in untouched:
        assert block in after
    assert after.split("class SchedulerPatch")[1] == before.split("class SchedulerPatch")[1]
    assert (plugin / "layers.py").read_text() == (PLUGIN / "layers.py").read_text()
    # the fork merged upstream's round_up fix, kept our cdiv, and moved its header to the new pin
    fork = (plugin / "mathx_fork.py").read_text()
    assert fork.startswith("# rebasekit: fork-of vllm/utils/mathx.py@1.1.0\n")
    assert (
        "(a + b - 1) // b" in fork and "multiple must be positive" in fork and "def align" in fork
    )


def test_port_dry_run_writes_nothing_and_skip_conflicts(tmp_path):
    fx = copy_fixtures(tmp_path)
    plugin = fx / "plugin" / "deepplug"
    before = {p.name: p.read_text() for p in plugin.glob("*.py")}
    dry = _run(
        "port",
        "--to",
        fx / "upstream_new",
        "--from",
        fx / "upstream_old",
        "--plugin",
        plugin,
        "--dry-run",
    )
    assert dry.exit_code == 1
    assert (
        "+            return []" in dry.output
        and "+# rebasekit: fork-of vllm/utils/mathx.py@1.1.0" in dry.output
    )
    assert {p.name: p.read_text() for p in plugin.glob("*.py")} == before
    skip = _run(
        "port",
        "--to",
        fx / "upstream_new",
        "--from",
        fx / "upstream_old",
        "--plugin",
        plugin,
        "--skip-conflicts",
    )
    assert "--- theirs (upstream 1.1.0) ---" in skip.output
    assert "<<<<<<<" not in (plugin / "runner.py").read_text()
    assert "return []" in (plugin / "runner.py").read_text()


def test_port_without_drift_is_a_no_op(tmp_path):
    fx = copy_fixtures(tmp_path)
    plugin = fx / "plugin" / "deepplug"
    result = _run(
        "port", "--to", fx / "upstream_old", "--from", fx / "upstream_old", "--plugin", plugin
    )
    assert result.exit_code == 0 and "nothing to port" in result.output


def test_diff_method_unified_and_errors():
    out = _run(
        "diff-method", "vllm.worker.runner.Runner.finish", "--from", OLD, "--to", NEW, "--unified"
    )
    assert out.exit_code == 1
    assert "-    result.sort()\n+    result.sort(reverse=True)" in out.output
    same = _run("diff-method", "vllm.worker.runner.Runner.prepare", "--from", OLD, "--to", NEW)
    assert same.exit_code == 0 and "unchanged" in same.output
    cls = _run(
        "diff-method", "vllm.layers.quant.ScaleSplit", "--from", OLD, "--to", NEW, "--unified"
    )
    assert cls.exit_code == 1 and "+class ScaleSplit:" in cls.output
    bad = _run("diff-method", "vllm.nothing.here", "--from", OLD, "--to", NEW)
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_lock_is_deterministic_and_verify_detects_staleness(tmp_path):
    fx = copy_fixtures(tmp_path)
    plugin = fx / "plugin" / "deepplug"
    lock = fx / "plugin" / "rebasekit.lock.json"
    assert _run("corpus", "lock", "--plugin", plugin, "--vllm", fx / "upstream_old").exit_code == 0
    first = lock.read_text()
    assert _run("corpus", "lock", "--plugin", plugin, "--vllm", fx / "upstream_old").exit_code == 0
    assert lock.read_text() == first
    data = json.loads(first)
    assert data["schema"] == 1 and data["upstream"] == {"package": "vllm", "version": "1.0.0"}
    runner_patch = next(p for p in data["patches"] if p["patch"] == "deepplug.runner.RunnerPatch")
    execute = next(a for a in runner_patch["attributes"] if a["name"] == "execute")
    assert execute["mirrors"] is True and execute["action"] == "replace"
    assert {r["attr"] for r in runner_patch["reads"]} == {
        "positions",
        "block_size",
        "max_len",
        "seq_lens",
    }
    assert {f["file"] for f in data["forks"]} == {
        "deepplug/mathx_fork.py",
        "deepplug/text_fork.py",
        "deepplug/tokfork.py",
    }

    ok = _run("corpus", "verify", "--plugin", plugin, "--vllm", fx / "upstream_old")
    assert ok.exit_code == 0, ok.output
    # stale against another upstream tree
    stale = _run("corpus", "verify", "--plugin", plugin, "--vllm", fx / "upstream_new")
    assert stale.exit_code == 1 and '+      "signature": "(quant_config, layer)"' in stale.output
    # stale against plugin code: a changed override body
    runner_py = plugin / "runner.py"
    runner_py.write_text(
        runner_py.read_text().replace("total += len(req) + 1", "total += len(req) + 2")
    )
    edited = _run("corpus", "verify", "--plugin", plugin, "--vllm", fx / "upstream_old")
    assert edited.exit_code == 1 and "plugin_fingerprint" in edited.output


def test_verify_bad_lock_is_exit_2(tmp_path):
    fx = copy_fixtures(tmp_path)
    plugin = fx / "plugin" / "deepplug"
    missing = _run("corpus", "verify", "--plugin", plugin, "--vllm", fx / "upstream_old")
    assert missing.exit_code == 2 and "no lock file" in missing.output
    (fx / "plugin" / "rebasekit.lock.json").write_text("{not json")
    broken = _run("corpus", "verify", "--plugin", plugin, "--vllm", fx / "upstream_old")
    assert broken.exit_code == 2 and "Traceback" not in broken.output
