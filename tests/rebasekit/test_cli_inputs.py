"""Tree inputs through the CLI: registry downloads (offline, via a local wheel), no network,
unknown versions, damaged caches and git refs; every failure exits 2 with a clear message."""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import git
import pytest
from cli_runner import StrictRunner as CliRunner

from rebasekit.cli import app
from rebasekit.upstream import wheels

FIX = Path(__file__).parent / "fixtures"
PLUGIN = str(FIX / "plugin" / "tinyplug")
OLD, NEW = FIX / "upstream_old", FIX / "upstream_new"
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def _bad_input(res, needle: str) -> None:
    assert res.exit_code == 2, res.output
    assert needle in res.stderr and "hint:" in res.stderr
    assert "Traceback" not in res.output + res.stderr


def _wheel(folder: Path, version: str, source: Path) -> Path:
    """A minimal ``vllm-<version>`` wheel of the fixture tree ``source`` (pip accepts it)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"vllm-{version}-py3-none-any.whl"
    info = f"vllm-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        for file in sorted((source / "vllm").rglob("*.py")):
            zf.write(file, file.relative_to(source).as_posix())
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
        zf.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        zf.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def local_registry(tmp_path, monkeypatch) -> Path:
    """Cache and pip pointed at a folder of wheels: no network, no user pip config."""
    links = tmp_path / "wheels"
    _wheel(links, "1.0.0", OLD)
    _wheel(links, "2.0.0", NEW)
    monkeypatch.setenv("REBASEKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    return tmp_path / "cache" / "trees"


def test_versions_download_extract_and_scan(local_registry):
    res = run("scan-imports", "--plugin", PLUGIN, "--from", "1.0.0", "--to", "2.0.0", "--json")
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    assert (
        doc["upstream"]["to"]["version"] == "2.0.0"
        and doc["upstream"]["from"]["version"] == "1.0.0"
    )
    folder = run("scan-imports", "--plugin", PLUGIN, "--from", str(OLD), "--to", str(NEW), "--json")
    keys = lambda d: sorted((f["code"], f["plugin"]["line"], f["drift"]) for f in d["findings"])  # noqa: E731
    assert keys(doc) == keys(json.loads(folder.stdout))  # a downloaded tree scans like the folder
    manifest = json.loads((local_registry / "vllm-2.0.0" / wheels.MANIFEST).read_text())
    assert manifest["count"] == len(
        [f for f in manifest["files"] if f.endswith((".py", "METADATA"))]
    )


def test_unknown_version(local_registry):
    _bad_input(
        run("scan", "--plugin", PLUGIN, "--vllm-version", "1.5.0"),
        "no vllm wheel for version 1.5.0",
    )
    assert not (local_registry / "vllm-1.5.0").exists()  # nothing half-made is left behind


def test_not_a_version(local_registry):
    _bad_input(
        run("scan", "--plugin", PLUGIN, "--to", "1.0.0.0.0"),
        "is not a folder, a version or REPO@REF",
    )


def test_no_network(tmp_path, monkeypatch):
    """An unreachable index (pip honours PIP_INDEX_URL) reads as a network error, not a bad version."""
    monkeypatch.setenv("REBASEKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", "5")
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    res = run("scan", "--plugin", PLUGIN, "--vllm-version", "0.26.0")
    _bad_input(res, "cannot reach the package registry to download vllm==0.26.0")
    assert "no vllm wheel" not in res.stderr
    assert not (tmp_path / "trees" / "vllm-0.26.0").exists()


@pytest.mark.parametrize(
    "damage,needle",
    [
        (
            lambda d: (d / "vllm" / "engine" / "core.py").write_text("trunc"),
            "changed (its hash differs",
        ),
        (
            lambda d: (d / "vllm" / "engine" / "core.py").unlink(),
            "is partial: vllm/engine/core.py is missing",
        ),
        (lambda d: (d / wheels.MANIFEST).write_text('{"format": 1, "cou'), "corrupt manifest"),
        (lambda d: (d / wheels.MANIFEST).unlink(), "is partial (no manifest)"),
    ],
)
def test_damaged_cache_is_detected(local_registry, damage, needle):
    assert (
        run("scan", "--plugin", PLUGIN, "--vllm-version", "2.0.0", "--select", "RK1").exit_code == 1
    )
    dest = local_registry / "vllm-2.0.0"
    damage(dest)
    res = run("scan", "--plugin", PLUGIN, "--vllm-version", "2.0.0", "--select", "RK1")
    _bad_input(res, needle)
    assert str(dest) in res.stderr  # the message names the folder to delete


def _upstream_repo(tmp_path: Path) -> Path:
    """A tiny upstream package committed at two tags; the work tree is removed afterwards."""
    repo = git.Repo.init(tmp_path / "up")
    work = Path(repo.working_tree_dir)
    for tag, src in (("v1", OLD), ("v2", NEW)):
        shutil.rmtree(work / "vllm", ignore_errors=True)
        shutil.copytree(src / "vllm", work / "vllm")
        repo.git.add(A=True)
        repo.index.commit(f"release {tag}")
        repo.create_tag(tag)
    shutil.rmtree(work / "vllm")
    return work


def test_from_to_git_refs_match_folder_scan(tmp_path):
    work = _upstream_repo(tmp_path)
    by_git = run("scan", "--plugin", PLUGIN, "--from", f"{work}@v1", "--to", f"{work}@v2", "--json")
    by_dir = run("scan", "--plugin", PLUGIN, "--from", str(OLD), "--to", str(NEW), "--json")
    assert by_git.exit_code == by_dir.exit_code == 1

    def strip(d):
        return sorted(
            (
                f["code"],
                f["plugin"]["path"],
                f["plugin"]["line"],
                f["drift"],
                f["message"]
                .replace(str(work) + "@v2", "<T>")
                .replace(str(NEW / "vllm"), "<T>")
                .replace(str(work) + "@v1", "<O>")
                .replace(str(OLD / "vllm"), "<O>"),
            )
            for f in json.loads(d.stdout)["findings"]
        )

    assert strip(by_git) == strip(by_dir)
    assert json.loads(by_git.stdout)["upstream"]["from"]["version"] == "1.0.0"
    via_flag = run("scan", "--plugin", PLUGIN, "--vllm-git", f"{work}@v2", "--json")
    assert json.loads(via_flag.stdout)["upstream"]["to"]["version"] == "2.0.0"


@pytest.mark.parametrize(
    "spec,needle",
    [
        ("{work}@v9", "no ref 'v9'"),
        ("{tmp}@v1", "is not a git repository"),
    ],
)
def test_bad_git_specs(tmp_path, spec, needle):
    work = _upstream_repo(tmp_path)
    (tmp_path / "plain").mkdir()
    text = spec.format(work=work, tmp=tmp_path / "plain")
    _bad_input(run("scan", "--plugin", PLUGIN, "--from", text, "--to", str(NEW)), needle)
    _bad_input(run("scan", "--plugin", PLUGIN, "--vllm-git", text), needle)
