"""Hostile inputs for the exit-code contract and the completeness of an analysis.

Each case breaks one thing about an otherwise good synthetic project (see synthetic.py);
the expected exit code is the contract's (0 clean, 1 findings, 2 bad input or an
incomplete analysis, 3 internal error), never whatever the code happens to do.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from corpus import Case
from synthetic import PYPROJECT, lock, project, tree, write

SCAN_UP1 = ["scan", "--vllm", "{work}/up1"]
INCOMPLETE = "--allow-incomplete"  # the fix every "incomplete analysis" message names


def _clean(work: Path) -> None:
    project(work)
    tree(work / "up1")


def _with_lock(text: object):
    def setup(work: Path) -> None:
        _clean(work)
        lock(work, text)

    return setup


OFFLINE = {
    "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
    "PIP_RETRIES": "0",
    "PIP_TIMEOUT": "2",
    "PIP_CONFIG_FILE": "/dev/null",
}


def _lock_pin_unreachable(work: Path) -> None:
    _findings_tree(work)
    lock(work, {"schema": 1, "upstream": {"package": "vllm", "version": "1.0.0"}})


def _broken_pyproject(work: Path) -> None:
    project(work, pyproject=PYPROJECT.replace("[tool.rebasekit]", "[tool.rebasekit"))
    tree(work / "up1")


def _broken_rebasekit_toml(work: Path) -> None:
    project(work, pyproject=PYPROJECT.replace('patch-bases = ["Patch"]\n', ""))
    write(work, {"myplug/rebasekit.toml": '[tool.rebasekit]\npatch-bases = ["Patch"\n'})
    tree(work / "up1")


def _new_syntax_upstream(work: Path) -> None:
    project(work)
    # Python 3.12 syntax at the top of the module the plugin patches: the finding in
    # Engine.step must still be reported, not dropped with the unparsable module.
    tree(work / "up2", changed=True, engine_prefix="type BatchList = list[int]\n\n\n")


def _broken_upstream(work: Path) -> None:
    project(work)
    # no parser reads this: the module's definitions are unknown, so the scan is incomplete
    tree(work / "up2", changed=True, engine_prefix="def broken(:\n    pass\n\n\n")


def _findings_tree(work: Path) -> None:
    project(work)
    tree(work / "up2", changed=True)


def _runbook_project(work: Path) -> None:
    project(work)
    tree(work / "up1")
    tree(work / "up2", changed=True)
    write(
        work,
        {
            "tests/test_engine.py": "from myplug.engine_patch import EnginePatch\n\n\n"
            "def test_step():\n    assert EnginePatch\n"
        },
    )


def _record_latin1(work: Path) -> None:
    _runbook_project(work)
    write(work, {"results.json": '{"smoke": "pass", "note": "caf\u00e9"}'.encode("latin-1")})


def _git(work: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(work), *args],
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "HOME": str(work),
            "PATH": "/usr/bin:/bin",
        },
    )


def _pinned_history(repo: Path, pins: list[str]) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q", "-b", "main")
    for pin in pins:
        write(repo, {"pyproject.toml": PYPROJECT.replace("vllm==1.0.0", f"vllm=={pin}")})
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"pin {pin}")


def _shallow_clone(work: Path) -> None:
    _pinned_history(work / "origin", ["1.0.0", "2.0.0", "3.0.0"])
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{work / 'origin'}", str(work / "clone")],
        check=True,
        capture_output=True,
    )


def _unreadable_branch(work: Path) -> None:
    repo = work / "repo"
    _pinned_history(repo, ["1.0.0"])
    _git(repo, "checkout", "-q", "-b", "rebase/vllm_v2.0.0")
    write(
        repo,
        {
            "pyproject.toml": PYPROJECT.replace("vllm==1.0.0", "vllm==2.0.0").replace(
                "[project]", "[project"
            )
        },
    )
    _git(repo, "commit", "-q", "-am", "pin 2.0.0 (typo)")
    _git(repo, "checkout", "-q", "main")


def _output_folder_is_a_file(work: Path) -> None:
    _runbook_project(work)
    write(work, {"out": "a file, not a folder\n"})


def _cache_path_is_a_file(work: Path) -> None:
    _clean(work)
    (work.parent / "cachefile").write_text("not a folder\n")


CASES = [
    Case("clean-project-scans-clean", _clean, SCAN_UP1, 0, "no findings"),
    Case("findings-exit-1", _findings_tree, ["scan", "--vllm", "{work}/up2"], 1, "RK210"),
    Case(
        "lock-malformed-json",
        _with_lock("{"),
        SCAN_UP1,
        2,
        INCOMPLETE,
        identical=("rebasekit.lock.json",),
    ),
    Case(
        "lock-foreign-schema",
        _with_lock({"schema": 99, "upstream": {"version": "1.0.0"}}),
        SCAN_UP1,
        2,
        "lock schema 99",
        identical=("rebasekit.lock.json",),
    ),
    Case(
        "lock-unpinned",
        _with_lock({"schema": 1, "upstream": {}}),
        SCAN_UP1,
        2,
        "records no upstream pin",
    ),
    Case(
        "lock-upstream-string-port",
        _with_lock({"schema": 1, "upstream": "1.0.0"}),
        ["port", "--to", "{work}/up1"],
        2,
        "records no upstream pin",
        identical=("myplug/engine_patch.py", "rebasekit.lock.json"),
    ),
    Case(
        "lock-upstream-empty-verify",
        _with_lock({"schema": 1, "upstream": {}}),
        ["corpus", "verify", "--vllm", "{work}/up1"],
        2,
        "regenerate it",
        identical=("rebasekit.lock.json",),
    ),
    Case(
        "lock-pin-unreachable-offline",
        _lock_pin_unreachable,
        ["scan", "--vllm", "{work}/up2"],
        2,
        "drift since the pin was not checked",
        env=OFFLINE,
    ),
    Case(
        "lock-incomplete-json-field", _with_lock("{"), [*SCAN_UP1, "--json"], 2, '"complete": false'
    ),
    Case("lock-incomplete-allowed", _with_lock("{"), [*SCAN_UP1, INCOMPLETE], 0, "warning:"),
    Case(
        "pyproject-toml-typo",
        _broken_pyproject,
        SCAN_UP1,
        2,
        "not valid TOML",
        identical=("pyproject.toml",),
    ),
    Case("rebasekit-toml-typo", _broken_rebasekit_toml, SCAN_UP1, 2, "not valid TOML"),
    Case(
        "patch-base-matches-nothing",
        _clean,
        [*SCAN_UP1, "--patch-base", "Nope"],
        2,
        "match no class",
    ),
    Case("select-unknown-code", _clean, [*SCAN_UP1, "--select", "RK9999"], 2, "known codes"),
    Case("ignore-unknown-code", _clean, [*SCAN_UP1, "--ignore", "XX1"], 2, "known codes"),
    Case(
        "upstream-newer-grammar", _new_syntax_upstream, ["scan", "--vllm", "{work}/up2"], 1, "RK210"
    ),
    Case(
        "upstream-unparsable-module",
        _broken_upstream,
        ["scan", "--vllm", "{work}/up2"],
        2,
        "does not parse",
    ),
    Case(
        "lock-refused-on-unparsable-upstream",
        _broken_upstream,
        ["corpus", "lock", "--vllm", "{work}/up2"],
        2,
        "nothing was written",
        identical=("pyproject.toml",),
    ),
    Case(
        "port-refused-on-unparsable-upstream",
        _broken_upstream,
        ["port", "--from", "{work}/up2", "--to", "{work}/up2"],
        2,
        "nothing was written",
        identical=("myplug/engine_patch.py",),
    ),
    Case(
        "corpus-show-on-unparsable-upstream",
        _broken_upstream,
        ["corpus", "show", "--vllm", "{work}/up2"],
        2,
        "incomplete analysis",
    ),
    Case(
        "corpus-show-incomplete-allowed",
        _broken_upstream,
        ["corpus", "show", "--vllm", "{work}/up2", INCOMPLETE],
        0,
        "does not parse",
    ),
    Case("corpus-show-complete", _clean, ["corpus", "show", "--vllm", "{work}/up1"], 0, "Engine"),
    Case("report-names-plugin-and-trees", _clean, SCAN_UP1, 0, "myplug"),
    Case(
        "record-not-utf8",
        _record_latin1,
        ["runbook", "--from", "{work}/up1", "--to", "{work}/up2", "--record", "results.json"],
        2,
        "not UTF-8",
        identical=("results.json",),
    ),
    Case(
        "runbook-tests-folder-missing",
        _runbook_project,
        ["runbook", "--from", "{work}/up1", "--to", "{work}/up2", "--tests", "nope"],
        2,
        "--tests nope",
    ),
    Case(
        "lock-output-folder-is-a-file",
        _output_folder_is_a_file,
        ["corpus", "lock", "--vllm", "{work}/up1", "--lock", "out/rebasekit.lock.json"],
        2,
        "not a directory",
        identical=("out",),
    ),
    Case(
        "runbook-output-folder-missing-parent-file",
        _output_folder_is_a_file,
        ["runbook", "--from", "{work}/up1", "--to", "{work}/up2", "--write", "out/plan.md"],
        2,
        "out",
        identical=("out",),
    ),
    Case(
        "scan-with-cache-path-a-file",
        _cache_path_is_a_file,
        SCAN_UP1,
        0,
        "no findings",
        env={"REBASEKIT_CACHE_DIR": "{work}/../cachefile"},
    ),
    Case(
        "download-with-cache-path-a-file",
        _cache_path_is_a_file,
        ["scan", "--vllm-version", "1.0.0"],
        2,
        "not a directory",
        env={"REBASEKIT_CACHE_DIR": "{work}/../cachefile", **OFFLINE},
    ),
    Case(
        "compare-pins-shallow-clone",
        _shallow_clone,
        ["compare-pins", "--repo", "clone", "--history"],
        2,
        "git fetch --unshallow",
    ),
    Case(
        "compare-pins-unreadable-revision",
        _unreadable_branch,
        ["compare-pins", "--repo", "repo"],
        2,
        "not valid TOML",
    ),
]
