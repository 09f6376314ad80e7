"""The CLI shell: exit codes, JSON/SARIF shape, bad input and the corpus command."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import git
import pytest
from cli_runner import StrictRunner as CliRunner

from rebasekit.cli import app
from rebasekit.codes import CODES
from rebasekit.errors import CacheError
from rebasekit.upstream import open_tree, wheels

FIX = Path(__file__).parent / "fixtures"
PLUGIN = str(FIX / "plugin" / "tinyplug")
OLD, NEW = str(FIX / "upstream_old"), str(FIX / "upstream_new")
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_exit_codes_and_json():
    res = run("scan-imports", "--plugin", PLUGIN, "--from", OLD, "--to", NEW, "--json")
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert doc["schema_version"] == 3 and doc["upstream"]["to"]["version"] == "2.0.0"
    assert {f["code"][:3] for f in doc["findings"]} <= {"RK0", "RK1"}
    assert doc["summary"]["findings"] == len(doc["findings"]) > 0
    clean = run("scan-signatures", "--plugin", PLUGIN, "--vllm", OLD, "--select", "RK21")
    assert clean.exit_code == 0, clean.stdout


def test_sarif_shape():
    res = run(
        "scan", "--plugin", PLUGIN, "--from", OLD, "--to", NEW, "--sarif", "--select", "RK1,RK2"
    )
    log = json.loads(res.stdout)
    assert log["version"] == "2.1.0"
    run0 = log["runs"][0]
    rule_ids = [r["id"] for r in run0["tool"]["driver"]["rules"]]
    assert set(rule_ids) == set(CODES)
    for result in run0["results"]:
        assert result["ruleId"] in rule_ids and result["level"] in ("error", "warning", "note")
        loc = result["locations"][0]["physicalLocation"]
        assert (
            loc["artifactLocation"]["uri"].startswith("tinyplug/")
            and loc["region"]["startLine"] >= 1
        )


def test_table_groups_by_file():
    res = run("scan", "--plugin", PLUGIN, "--from", OLD, "--to", NEW, "--select", "RK1")
    assert res.exit_code == 1
    assert "tinyplug/bad.py" in res.stdout and "RK103" in res.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (["scan", "--vllm", "/no/such/folder"], "no such folder"),
        (["scan", "--plugin", "/no/such/plugin", "--vllm", NEW], "does not exist"),
        (["scan", "--plugin", PLUGIN], "no upstream tree given"),
        (["scan", "--plugin", PLUGIN, "--vllm", NEW, "--to", OLD], "both name the tree"),
        (["scan", "--plugin", PLUGIN, "--to", "/no/such/clone@main"], "no git repository"),
        (["scan", "--plugin", PLUGIN, "--vllm", str(FIX)], "not a 'vllm' package folder"),
        (["scan", "--plugin", PLUGIN, "--to", f"{PLUGIN}@main"], "not a git repository"),
    ],
)
def test_bad_input_exits_2_without_traceback(args, needle):
    res = run(*args)
    assert res.exit_code == 2
    assert needle in res.stderr and "hint:" in res.stderr and "Traceback" not in res.stderr


def test_syntax_error_file_exit_2_but_scans_the_rest(tmp_path):
    dest = tmp_path / "tinyplug"
    shutil.copytree(PLUGIN, dest)
    (dest / "broken.py").write_text("class X(:\n")
    res = run(
        "scan", "--plugin", str(dest), "--from", OLD, "--to", NEW, "--json", "--select", "RK0,RK1"
    )
    assert res.exit_code == 2
    codes = [f["code"] for f in json.loads(res.stdout)["findings"]]
    assert "RK001" in codes and "RK103" in codes


def test_corpus_show_json():
    res = run("corpus", "show", "--plugin", PLUGIN, "--vllm", NEW, "--json")
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    good = next(p for p in data["patches"] if p["name"] == "GoodEnginePatch")
    actions = {a["name"]: a["action"] for a in good["attributes"]}
    assert actions == {
        "same": "replaces",
        "passthrough": "replaces",
        "inherited": "replaces",
        "brand_new": "adds",
    }
    assert good["target"] == "vllm.Engine"  # as the plugin spells it; the index canonicalises
    assert any(c["via_orig"] == "_orig_same" and c["keywords"] == ["c"] for c in data["calls"])


def test_git_ref_tree(tmp_path):
    repo = git.Repo.init(tmp_path / "up")
    work = Path(repo.working_tree_dir)
    for n, src in enumerate((OLD, NEW)):
        if (work / "vllm").exists():
            shutil.rmtree(work / "vllm")
        shutil.copytree(Path(src) / "vllm", work / "vllm")
        repo.git.add(A=True)
        repo.index.commit(f"v{n + 1}")
        repo.create_tag(f"v{n + 1}")
    shutil.rmtree(work / "vllm")  # the object database alone must be enough
    tree = open_tree(f"{work}@v1")
    assert tree.version == "1.0.0" and tree.exists("vllm/engine/core.py")
    res = run(
        "scan",
        "--plugin",
        PLUGIN,
        "--from",
        f"{work}@v1",
        "--vllm-git",
        f"{work}@v2",
        "--json",
        "--select",
        "RK10",
    )
    codes = {f["code"] for f in json.loads(res.stdout)["findings"]}
    assert {"RK103", "RK104", "RK105"} <= codes
    bad = run("scan", "--plugin", PLUGIN, "--vllm-git", f"{work}@nope")
    assert bad.exit_code == 2 and "no ref 'nope'" in bad.stderr


def test_corrupt_and_partial_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("REBASEKIT_CACHE_DIR", str(tmp_path))
    dest = tmp_path / "trees" / "vllm-9.9.9"
    shutil.copytree(Path(NEW) / "vllm", dest / "vllm")
    res = run("scan", "--plugin", PLUGIN, "--vllm-version", "9.9.9")
    assert res.exit_code == 2 and "partial" in res.stderr and str(dest) in res.stderr
    files = {
        p.relative_to(dest).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in dest.rglob("*.py")
    }
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + bytes.fromhex(files[rel]))
    (dest / wheels.MANIFEST).write_text(
        json.dumps(
            {
                "format": wheels.MANIFEST_FORMAT,
                "count": len(files),
                "sha256": digest.hexdigest(),
                "files": files,
            }
        )
    )
    assert open_tree("9.9.9").version == "9.9.9"
    core = dest / "vllm" / "engine" / "core.py"
    original = core.read_bytes()
    core.write_bytes(bytes([original[0] ^ 1]) + original[1:])  # same size, other content
    with pytest.raises(CacheError, match="changed"):
        open_tree("9.9.9")


def test_default_plugin_outside_any_project_is_the_bundled_one(tmp_path, monkeypatch):
    """From a folder with no pyproject, rebasekit analyses the plugin shipped beside it,
    with the patch markers that plugin declares in its package's rebasekit.toml."""
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(app, ["corpus", "show", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["package"] == "arctic_inference"
    assert data["patch_bases"] == ["ArcticPatch"]
    names = {p["name"] for p in data["patches"]}
    assert {"FP32LMHeadPatch", "WorkerSleepKeepDrafterPatch", "EngineArgsPatch"} <= names


def test_error_text_with_brackets_is_printed_verbatim():
    """Error messages quote TOML tables; the renderer must not eat them as markup."""
    import typer

    from rebasekit.commands._common import handle_errors
    from rebasekit.errors import PluginError

    probe = typer.Typer()

    @probe.command()
    @handle_errors
    def fail() -> None:
        raise PluginError(
            'no [tool.rebasekit] plugin = "..." found', hint="set [tool.rebasekit] plugin"
        )

    out = CliRunner().invoke(probe, [])
    assert out.exit_code == 2
    assert 'no [tool.rebasekit] plugin = "..." found' in out.output
    assert "hint: set [tool.rebasekit] plugin" in out.output
