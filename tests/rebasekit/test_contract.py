"""The exit-code contract and the completeness report, through the CLI.

0 clean, 1 findings, 2 bad input or an incomplete analysis, 3 internal error; every
degradation shown in text, JSON and SARIF; the report names what it scanned.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer
from cli_runner import StrictRunner
from typer.testing import CliRunner

from rebasekit import pyparse
from rebasekit.cli import app
from rebasekit.index import CodeIndex
from rebasekit.index.cache import FactsCache
from rebasekit.upstream import open_tree

FIX = Path(__file__).parent / "fixtures"
PLUGIN_PROJECT = FIX / "plugin"
OLD, NEW = str(FIX / "upstream_old"), str(FIX / "upstream_new")


def run(*args: str, **kwargs):
    # wide enough that no path is folded mid-word in the text output
    return StrictRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "400"}, **kwargs)


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of the fixture plugin project (pyproject + tinyplug), free to break."""
    dest = tmp_path / "proj"
    shutil.copytree(PLUGIN_PROJECT, dest)
    return dest


def _boom(*args, **kwargs):
    raise RuntimeError("planted bug")


def test_a_bug_exits_3_with_one_line_not_1(monkeypatch):
    monkeypatch.setattr("rebasekit.commands.scan.scan_plugin", _boom)
    res = run("scan", "--plugin", PLUGIN_PROJECT / "tinyplug", "--vllm", NEW)
    assert res.exit_code == 3
    assert "internal error (a bug in rebasekit): RuntimeError: planted bug" in res.stderr
    assert (
        "--debug" in res.stderr
        and "REBASEKIT_DEBUG=1" in res.stderr
        and "Traceback" not in res.output
    )


@pytest.mark.parametrize("how", ["env", "option"])
def test_debug_re_raises_the_bug(monkeypatch, how):
    monkeypatch.setattr("rebasekit.commands.scan.scan_plugin", _boom)
    args = ["scan", "--plugin", str(PLUGIN_PROJECT / "tinyplug"), "--vllm", NEW]
    if how == "env":
        monkeypatch.setenv("REBASEKIT_DEBUG", "1")
    else:
        monkeypatch.delenv("REBASEKIT_DEBUG", raising=False)
        args = ["--debug", *args]
    res = CliRunner().invoke(app, args)  # the plain runner: the exception is the point here
    assert isinstance(res.exception, RuntimeError) and str(res.exception) == "planted bug"


def test_strict_runner_fails_on_a_crash():
    probe = typer.Typer()

    @probe.command()
    def crash() -> None:
        raise KeyError("x")

    with pytest.raises(AssertionError, match="raised KeyError"):
        StrictRunner().invoke(probe, [])


def test_help_documents_the_exit_codes():
    for args in ([], ["scan"], ["compare-pins"]):
        text = " ".join(run(*args, "--help").stdout.split())
        assert (
            "2 bad input or an incomplete" in text or "2 bad input or an incomplete ledger" in text
        ), args
    top = " ".join(run("--help").stdout.split())
    assert "0 clean, 1 findings" in top and "3 internal error" in top


def test_malformed_lock_is_incomplete_in_every_format(project):
    (project / "rebasekit.lock.json").write_text("{")
    base = ["scan", "--plugin", project / "tinyplug", "--vllm", NEW]
    text = run(*base)
    assert text.exit_code == 2
    flat = " ".join(text.stdout.split())
    assert "warning:" in flat and "rebasekit.lock.json" in flat and "incomplete analysis" in flat
    assert "--allow-incomplete" in text.stderr
    doc = json.loads(run(*base, "--json").stdout)
    assert doc["complete"] is False and doc["summary"]["degradations"] == 1
    assert [d["kind"] for d in doc["degradations"]] == ["lock-unusable"]
    log = json.loads(run(*base, "--sarif").stdout)["runs"][0]
    invocation = log["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert [n["descriptor"]["id"] for n in invocation["toolExecutionNotifications"]] == [
        "lock-unusable"
    ]
    allowed = run(*base, "--allow-incomplete", "--json")
    assert allowed.exit_code == 1 and json.loads(allowed.stdout)["findings"]


def test_good_lock_is_complete(project):
    doc = json.loads(run("scan", "--plugin", project / "tinyplug", "--vllm", NEW, "--json").stdout)
    assert doc["complete"] is True and doc["degradations"] == []


def test_report_names_the_plugin_and_both_trees(project):
    res = run("scan", "--plugin", project / "tinyplug", "--from", OLD, "--to", NEW)
    flat = " ".join(res.stdout.split())
    assert str(project / "tinyplug") in flat
    assert (
        f"NEW: {Path(NEW).resolve() / 'vllm'} (2.0.0)" in flat
        and f"OLD: {Path(OLD).resolve() / 'vllm'} (1.0.0)" in flat
    )
    doc = json.loads(
        run("scan", "--plugin", project / "tinyplug", "--from", OLD, "--to", NEW, "--json").stdout
    )
    assert doc["plugin"] == str(project / "tinyplug")
    assert doc["upstream"]["to"]["source"] == NEW and doc["upstream"]["from"]["source"] == OLD
    sarif = json.loads(
        run("scan", "--plugin", project / "tinyplug", "--from", OLD, "--to", NEW, "--sarif").stdout
    )
    assert sarif["runs"][0]["properties"]["upstream"]["from"]["source"] == OLD


def test_sarif_declares_every_base_and_encodes_spaces(project):
    (project / "tinyplug" / "bad.py").rename(project / "tinyplug" / "bad copy.py")
    run0 = json.loads(
        run("scan", "--plugin", project / "tinyplug", "--vllm", NEW, "--sarif").stdout
    )["runs"][0]
    bases = run0["originalUriBaseIds"]
    uris = []
    for result in run0["results"]:
        for loc in result.get("locations", []) + result.get("relatedLocations", []):
            art = loc["physicalLocation"]["artifactLocation"]
            assert art["uriBaseId"] in bases
            uris.append(art["uri"])
    assert "tinyplug/bad%20copy.py" in uris and not any(" " in u for u in uris)
    assert bases["UPSTREAMROOT"]["uri"] == Path(NEW).resolve().as_uri() + "/"


def test_patch_base_that_matches_nothing_is_incomplete(project):
    res = run(
        "scan", "--plugin", project / "tinyplug", "--vllm", NEW, "--patch-base", "Nope", "--json"
    )
    assert res.exit_code == 2
    assert [d["kind"] for d in json.loads(res.stdout)["degradations"]] == ["patch-bases-unmatched"]


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_code_is_bad_input(option):
    res = run("scan", "--plugin", PLUGIN_PROJECT / "tinyplug", "--vllm", NEW, option, "RK9999")
    assert res.exit_code == 2 and "RK9999: no such code" in res.stderr and "RK210" in res.stderr


def test_pyproject_typo_is_an_error_not_the_bundled_plugin(project, monkeypatch):
    (project / "pyproject.toml").write_text("[tool.rebasekit\nplugin = 'tinyplug'\n")
    monkeypatch.chdir(project)
    res = run("scan", "--vllm", NEW)
    assert (
        res.exit_code == 2
        and "is not valid TOML" in res.stderr
        and "arctic_inference" not in res.output
    )


def test_broken_rebasekit_toml_is_an_error(project):
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (project / "tinyplug" / "rebasekit.toml").write_text("[tool.rebasekit]\npatch-bases = [\n")
    res = run("scan", "--plugin", project / "tinyplug", "--vllm", NEW)
    assert res.exit_code == 2 and "rebasekit.toml is not valid TOML" in " ".join(res.stderr.split())


def _tree_with(tmp_path: Path, prefix: str) -> Path:
    dest = tmp_path / "up"
    shutil.copytree(Path(NEW) / "vllm", dest / "vllm")
    core = dest / "vllm" / "engine" / "core.py"
    core.write_text(prefix + core.read_text())
    return dest


def test_upstream_in_a_newer_grammar_keeps_its_findings(project, tmp_path):
    plain = json.loads(
        run("scan", "--plugin", project / "tinyplug", "--vllm", NEW, "--json").stdout
    )
    newer = _tree_with(
        tmp_path, "type Batch = list[int]\n\n\ndef ident[T](x: T) -> T:\n    return x\n\n\n"
    )
    res = run("scan", "--plugin", project / "tinyplug", "--vllm", newer, "--json")
    doc = json.loads(res.stdout)
    assert doc["complete"] is True
    assert sorted(f["code"] for f in doc["findings"]) == sorted(
        f["code"] for f in plain["findings"]
    )


def test_upstream_file_no_parser_reads_is_incomplete(project, tmp_path):
    broken = _tree_with(tmp_path, "def broken(:\n    pass\n")
    res = run("scan", "--plugin", project / "tinyplug", "--vllm", broken, "--json")
    assert res.exit_code == 2
    unparsed = [d for d in json.loads(res.stdout)["degradations"] if d["kind"] == "file-unparsed"]
    assert [d["subject"].rsplit(": ", 1)[1] for d in unparsed] == ["vllm/engine/core.py"]


def test_newer_grammar_keeps_names_signatures_and_lines():
    source = "import os\n\ntype Alias[T] = list[T]\n\n\nclass Box[T]:\n    def get[U](self, key: U, *, default=None) -> T:\n        return f\"{key['a']}\"\n"
    tree = pyparse.parse(source)
    names = [getattr(n, "name", None) or n.targets[0].id for n in tree.body[1:]]
    assert names == ["Alias", "Box"] and tree.body[1].lineno == 3 and tree.body[2].lineno == 6
    method = tree.body[2].body[0]
    assert [a.arg for a in method.args.args] == ["self", "key"] and method.args.kwonlyargs[
        0
    ].arg == "default"
    with pytest.raises(SyntaxError):
        pyparse.parse("def broken(:\n")


def test_index_reads_a_newer_grammar_module(tmp_path):
    tree = _tree_with(tmp_path, "type Batch = list[int]\n")
    index = CodeIndex(open_tree(str(tree)), FactsCache(None))
    assert index.resolve("vllm.engine.core.Batch") is not None
    assert index.module("vllm.engine.core").syntax_error is None


def test_wheel_without_the_package_names_a_real_option(tmp_path):
    import zipfile

    from rebasekit.errors import DownloadError
    from rebasekit.upstream import wheels

    wheel = tmp_path / "vllm-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("other/__init__.py", "")
    with pytest.raises(DownloadError) as err:
        wheels._extract(wheel, tmp_path / "staging", "vllm")
    assert "--package" not in (err.value.hint or "") and "--vllm PATH" in err.value.hint
    options = " ".join(run("scan", "--help").stdout.split())
    assert "--vllm" in options and "--package" not in options


def test_runbook_tests_folder_that_matches_nothing(tmp_path):
    from rebasekit.errors import InputError
    from rebasekit.runbook.testmap import scan_tests

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "helpers.py").write_text("X = 1\n")
    with pytest.raises(InputError, match="no test_"):
        scan_tests(tmp_path, "tests", "plug")
    with pytest.raises(InputError, match="--tests nope: no such folder"):
        scan_tests(tmp_path, "nope", "plug")


def test_a_skipped_upstream_file_is_reported_once(project, tmp_path):
    tree = _tree_with(tmp_path, "")
    core = tree / "vllm" / "engine" / "core.py"
    core.unlink()
    core.symlink_to(tmp_path / "nowhere.py")  # dangling: the loader skips it
    res = run("scan", "--plugin", project / "tinyplug", "--vllm", tree, "--json")
    assert res.exit_code == 2
    about_core = [
        d
        for d in json.loads(res.stdout)["degradations"]
        if d["subject"].endswith("vllm/engine/core.py")
    ]
    assert len(about_core) == 1 and about_core[0]["kind"] != "file-unparsed"
