"""Input hygiene: source decoded as Python does, non-files skipped with a recorded warning
(never a hang, never a memory blow-up), git refs checked before git sees them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import git
import pytest
from deep_helpers import copy_fixtures
from runbook_project import PLUGIN_SKELETON, write_tree
from safety_helpers import cli

from rebasekit.corpus import extract_corpus
from rebasekit.errors import GitRefError, InputError
from rebasekit.index import CodeIndex, FactsCache
from rebasekit.index.symbols import Status
from rebasekit.runbook.project import changed_since
from rebasekit.sourcefile import MAX_SOURCE_BYTES, SkippedFile, SourceText, read_source_bytes
from rebasekit.upstream import open_tree

FIX = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ("pipe.py", "folder.py", "dangling.py", "zero.py", "big.py")
CAP = 2 * 1024 * 1024  # the per-file size cap the README documents


def _plant_hostile_files(folder: Path) -> None:
    """A named pipe, a folder, a dangling link, a link to /dev/zero and an oversized file, all ``*.py``."""
    os.mkfifo(folder / "pipe.py")
    (folder / "folder.py").mkdir()
    (folder / "dangling.py").symlink_to(folder / "nowhere.py")
    (folder / "zero.py").symlink_to("/dev/zero")
    (folder / "big.py").write_bytes(b"X = 1\n" + b"#" * CAP)


def _run_cli(*args: object, timeout: int = 120) -> subprocess.CompletedProcess:
    """rebasekit in a child process, so a hang fails the test (TimeoutExpired) instead of blocking it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "rebasekit.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
    )


@pytest.fixture(autouse=True)
def _no_hang():
    """A read that blocks (a named pipe opened for reading) fails the test instead of stalling it."""

    def expire(signum, frame):
        raise TimeoutError("rebasekit blocked on a file read")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def hostile_plugin(tmp_path) -> Path:
    plugin = tmp_path / "tinyplug"
    shutil.copytree(FIX / "plugin" / "tinyplug", plugin)
    _plant_hostile_files(plugin)
    return plugin


@pytest.fixture
def hostile_tree(tmp_path) -> Path:
    tree = tmp_path / "upstream"
    shutil.copytree(FIX / "upstream_new", tree)
    _plant_hostile_files(tree / "vllm")
    return tree


def test_reader_refuses_non_files_without_blocking(tmp_path):
    _plant_hostile_files(tmp_path)
    reasons = {}
    for name in HOSTILE:
        with pytest.raises(SkippedFile) as info:
            read_source_bytes(tmp_path / name)
        reasons[name] = info.value.reason
    assert reasons == {
        "pipe.py": "not a regular file (pipe, socket or device)",
        "folder.py": "a folder, not a file",
        "dangling.py": "dangling symlink",
        "zero.py": "not a regular file (pipe, socket or device)",
        "big.py": f"larger than the 2 MiB size cap ({CAP + 6} bytes)",
    }


def test_plugin_with_hostile_files_is_read_with_warnings(hostile_plugin):
    corpus = extract_corpus(hostile_plugin, ["Patch"])
    skipped = {d.subject.rsplit("/", 1)[-1]: d for d in corpus.degradations}
    assert sorted(skipped) == sorted(HOSTILE)
    assert all(d.kind == "file-skipped" for d in skipped.values())
    assert corpus.patches  # the regular files were still read


def test_scan_over_hostile_plugin_and_tree_neither_hangs_nor_crashes(hostile_plugin, hostile_tree):
    proc = _run_cli("scan", "--plugin", hostile_plugin, "--vllm", hostile_tree, "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (1, 2), (
        proc.stderr
    )  # findings, or incomplete: never a crash (3) nor clean


def test_tree_with_hostile_files_records_them_and_keeps_their_names_unknowable(hostile_tree):
    tree = open_tree(str(hostile_tree))
    files = list(tree.iter_py_files())
    assert (
        not any(f.rsplit("/", 1)[-1] in HOSTILE for f in files) and "vllm/engine/core.py" in files
    )
    assert sorted(d.subject.rsplit("/", 1)[-1] for d in tree.degradations) == sorted(HOSTILE)
    index = CodeIndex(tree, FactsCache(None))
    # an unreadable module may define anything: its names are never reported as missing
    assert index.lookup("vllm.pipe.Anything").status is Status.DYNAMIC
    assert index.lookup("vllm.big.X").status is Status.DYNAMIC
    assert {d.kind for d in index.degradations} == {"file-skipped"}


def test_latin1_plugin_with_coding_cookie_scans_like_utf8(tmp_path):
    utf8, latin = copy_fixtures(tmp_path / "u"), copy_fixtures(tmp_path / "l")
    for fx, encoding in ((utf8, "utf-8"), (latin, "latin-1")):
        for path in (fx / "plugin" / "deepplug").glob("*.py"):
            text = path.read_text(encoding="utf-8")
            path.write_bytes(
                (f"# -*- coding: {encoding} -*-\n# r\u00e9sum\u00e9\n" + text).encode(encoding)
            )
    results = []
    for fx in (utf8, latin):
        res = cli(
            "scan",
            "--plugin",
            fx / "plugin" / "deepplug",
            "--from",
            fx / "upstream_old",
            "--to",
            fx / "upstream_new",
            "--json",
        )
        assert res.exit_code == 1, res.output
        results.append(
            sorted((f["code"], f["message"]) for f in json.loads(res.stdout)["findings"])
        )
    assert results[0] == results[1] and results[0]


def test_documented_cap_is_the_one_applied():
    assert MAX_SOURCE_BYTES == CAP


def test_source_text_keeps_bom_and_crlf():
    data = b"\xef\xbb\xbfX = '\xc3\xa9'\r\nY = 2\r\n"
    source = SourceText.from_bytes(data)
    assert (
        source.text == "X = '\u00e9'\nY = 2\n"
        and source.encoding == "utf-8-sig"
        and source.newline == "\r\n"
    )
    assert source.encode(source.text) == data


# -- git refs ------------------------------------------------------------------------------


def _repo(path: Path) -> git.Repo:
    repo = git.Repo.init(path)
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "t")
        cfg.set_value("user", "email", "t@example.com")
    return repo


def test_changed_since_refuses_an_option_as_ref(tmp_path):
    write_tree(tmp_path, PLUGIN_SKELETON)
    repo = _repo(tmp_path)
    repo.git.add(A=True)
    repo.index.commit("init")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    with pytest.raises(GitRefError, match="not a git ref"):
        changed_since(tmp_path, f"--output={victim}", "plug")
    assert victim.read_text() == "precious\n"
    assert changed_since(tmp_path, "HEAD", "plug") == []


def test_runbook_changed_since_injection_leaves_the_file_untouched(tmp_path):
    proj = tmp_path / "proj"
    write_tree(proj, PLUGIN_SKELETON)
    for name in ("old", "new"):
        write_tree(
            tmp_path / name,
            {
                "vllm/__init__.py": "",
                "vllm/worker/__init__.py": "",
                "vllm/worker/runner.py": "class Runner:\n    pass\n",
            },
        )
    repo = _repo(proj)
    repo.git.add(A=True)
    repo.index.commit("init")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    res = cli(
        "runbook",
        "--from",
        tmp_path / "old",
        "--to",
        tmp_path / "new",
        "--project",
        proj,
        f"--changed-since=--output={victim}",
    )
    assert res.exit_code == 2, res.output
    assert "not a git ref" in res.output
    assert victim.read_text() == "precious\n"


def test_git_tree_refuses_an_option_as_ref(tmp_path):
    repo = _repo(tmp_path)
    shutil.copytree(FIX / "upstream_new" / "vllm", tmp_path / "vllm")
    repo.git.add(A=True)
    repo.index.commit("v1")
    with pytest.raises(GitRefError, match="not a git ref"):
        open_tree(f"{tmp_path}@--output={tmp_path / 'x'}")
    assert not (tmp_path / "x").exists()
    assert open_tree(f"{tmp_path}@HEAD").exists("vllm/engine/core.py")


def test_corrupt_git_object_is_a_clear_error(tmp_path):
    repo = _repo(tmp_path)
    shutil.copytree(FIX / "upstream_new" / "vllm", tmp_path / "vllm")
    repo.git.add(A=True)
    repo.index.commit("v1")
    blob = repo.head.commit.tree / "vllm" / "engine" / "core.py"
    obj = tmp_path / ".git" / "objects" / blob.hexsha[:2] / blob.hexsha[2:]
    obj.chmod(0o644)
    obj.write_bytes(b"\x78\x9c garbage that is not zlib")
    res = cli(
        "scan-imports", "--plugin", FIX / "plugin" / "tinyplug", "--vllm-git", f"{tmp_path}@HEAD"
    )
    assert res.exit_code == 2, res.output
    assert "git fsck" in res.output


def test_a_ref_starting_with_dash_is_refused_before_git(tmp_path):
    from rebasekit.gitref import verify_commit

    with pytest.raises(InputError, match="not a git ref"):
        verify_commit(tmp_path, "-h")


def test_git_tree_symlinked_module_is_skipped_and_unknowable(tmp_path):
    shutil.copytree(FIX / "upstream_new" / "vllm", tmp_path / "vllm")
    (tmp_path / "vllm" / "linked.py").symlink_to("/dev/zero")
    _repo(tmp_path).git.add(A=True)
    git.Repo(tmp_path).index.commit("v1")
    tree = open_tree(f"{tmp_path}@HEAD")
    assert [d.subject.rsplit(": ", 1)[-1] for d in tree.degradations] == ["vllm/linked.py"]
    index = CodeIndex(tree, FactsCache(None))
    assert index.lookup("vllm.linked.Anything").status is Status.DYNAMIC
