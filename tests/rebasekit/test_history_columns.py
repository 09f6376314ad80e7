"""Columns of the ledger, mined from real git repositories built on the fly."""

from __future__ import annotations

import git
import pytest
from history_gitrepo import GitRepo, pyproject

from rebasekit.errors import InputError
from rebasekit.history.compare import CompareOptions, compare_pins


def columns(root, **options):
    ledger = compare_pins(root, CompareOptions(**options))
    return [
        (c.kind, c.name if c.kind != "commit" else c.info.subject, c.header) for c in ledger.columns
    ]


@pytest.fixture
def bumped(tmp_path):
    """main: 0.24.0 -> 0.25.1 -> (unrelated) -> 0.26.0; bench extra and comments move too."""
    repo = GitRepo(tmp_path / "r")
    repo.commit("start at 0.24", {"pyproject.toml": pyproject("0.24.0", bench="0.30.0")})
    repo.commit("bump to 0.25.1", {"pyproject.toml": pyproject("0.25.1", bench="0.31.0")})
    repo.commit("docs", {"README.md": "hello\n"})
    repo.commit(
        "bench baseline only",
        {"pyproject.toml": pyproject("0.25.1", bench="0.40.0", comment="0.99.0")},
    )
    repo.commit("bump to 0.26.0", {"pyproject.toml": pyproject("0.26.0", bench="0.40.0")})
    return repo


def test_without_history_only_branches(bumped):
    bumped.branch("rebase/vllm_v0.27.0")
    bumped.branch("feature/x")  # not a rebase branch
    assert columns(bumped.root) == [
        ("branch", "main", "0.26.0"),
        ("branch", "rebase/vllm_v0.27.0", "0.26.0"),
    ]


def test_history_adds_first_commit_of_each_pin(bumped):
    assert columns(bumped.root, history="") == [
        ("commit", "start at 0.24", "0.24.0"),
        ("commit", "bump to 0.25.1", "0.25.1"),
        ("branch", "main", "0.26.0"),  # the branch wins over "bump to 0.26.0"
    ]


def test_rebase_branch_with_new_pin_and_pattern_override(bumped):
    bumped.branch("rebase/vllm_v0.27.0")
    bumped.checkout("rebase/vllm_v0.27.0")
    bumped.commit("rebase onto 0.27.0", {"pyproject.toml": pyproject("0.27.0")})
    bumped.checkout("main")
    got = columns(bumped.root, history="")
    assert got[-1] == ("branch", "rebase/vllm_v0.27.0", "0.27.0")
    assert [c[2] for c in got] == ["0.24.0", "0.25.1", "0.26.0", "0.27.0"]
    assert columns(bumped.root, branch_globs=("nothing/*",)) == [("branch", "main", "0.26.0")]


def test_merge_bumps_count_on_first_parent_only(tmp_path):
    repo = GitRepo(tmp_path / "r")
    repo.commit("start", {"pyproject.toml": pyproject("0.8.0")})
    repo.branch("upgrade")
    repo.checkout("upgrade")
    repo.commit("try 0.9.0.1", {"pyproject.toml": pyproject("0.9.0.1")})
    repo.commit("settle on 0.10.1", {"pyproject.toml": pyproject("0.10.1")})
    repo.checkout("main")
    repo.commit("main work", {"a.py": "x = 1\n"})
    repo.merge("upgrade", "Merge upgrade")
    repo.commit("later", {"a.py": "x = 2\n"})
    repo.branch("rebase/vllm_v0.9")
    got = columns(repo.root, history="")
    # 0.9.0.1 lived only on the side branch; the merge is where main took 0.10.1.
    assert got == [
        ("commit", "start", "0.8.0"),
        ("branch", "main", "0.10.1"),
        ("branch", "rebase/vllm_v0.9", "0.10.1"),
    ]
    mined = compare_pins(repo.root, CompareOptions(history="main", branch_globs=("none",)))
    assert mined.columns[0].kind == "commit"
    # REF can be any ref: the side branch's own history shows the intermediate pin.
    got = columns(repo.root, history="upgrade", branch_globs=("none",))
    assert [c[2] for c in got] == ["0.8.0", "0.9.0.1", "0.10.1"]


def test_remote_rebase_branches_appear_once(bumped, tmp_path):
    bumped.branch("rebase/vllm_v0.27.0")
    bumped.checkout("rebase/vllm_v0.27.0")
    bumped.commit("0.27", {"pyproject.toml": pyproject("0.27.0")})
    bumped.branch("rebase/vllm_v0.28.0")
    bumped.checkout("rebase/vllm_v0.28.0")
    bumped.commit("0.28", {"pyproject.toml": pyproject("0.28.0")})
    bumped.checkout("main")
    clone = git.Repo.clone_from(bumped.root, tmp_path / "clone")
    clone.create_head("rebase/vllm_v0.27.0", "origin/rebase/vllm_v0.27.0")
    ledger = compare_pins(tmp_path / "clone", CompareOptions(history=""))
    branch_cols = [(c.name, c.ref, c.header) for c in ledger.columns if c.kind == "branch"]
    assert branch_cols == [
        ("main", "refs/heads/main", "0.26.0"),
        ("rebase/vllm_v0.27.0", "refs/heads/rebase/vllm_v0.27.0", "0.27.0"),  # local preferred
        ("rebase/vllm_v0.28.0", "refs/remotes/origin/rebase/vllm_v0.28.0", "0.28.0"),
    ]


def test_pin_moving_back_keeps_first_commit_per_pin(tmp_path):
    repo = GitRepo(tmp_path / "r")
    repo.commit("0.24", {"pyproject.toml": pyproject("0.24.0")})
    repo.commit("0.26", {"pyproject.toml": pyproject("0.26.0")})
    repo.commit("back to 0.24", {"pyproject.toml": pyproject("0.24.0")})
    repo.commit("0.26 again", {"pyproject.toml": pyproject("0.26.0")})
    repo.commit("back to 0.24 for good", {"pyproject.toml": pyproject("0.24.0")})
    assert columns(repo.root, history="") == [
        ("branch", "main", "0.24.0"),
        ("commit", "0.26", "0.26.0"),
    ]


def test_worktree_placed_by_version(bumped):
    (bumped.root / "pyproject.toml").write_text(pyproject("0.25.5"))
    got = columns(bumped.root, history="", include_worktree=True)
    assert [c[2] for c in got] == ["0.24.0", "0.25.1", "0.25.5", "0.26.0"]
    assert got[2][0] == "worktree"


# The version constant is looked for in the module vLLM loads: the plugin's entry point.
ENTRY_POINT = '[project.entry-points."vllm.general_plugins"]\nplug = "plug.vllm.plugin:register"\n'


def test_constant_pin_and_missing_pin(tmp_path):
    repo = GitRepo(tmp_path / "r")
    repo.commit("no pin yet", {"pyproject.toml": "[project]\nname='p'\n"})
    repo.commit(
        "constant",
        {
            "plug/vllm/plugin.py": 'VLLM_PATCH_VERSION = "0.5.0"\n',
            "pyproject.toml": ENTRY_POINT,
        },
    )
    repo.commit(
        "extra",
        {
            "pyproject.toml": ENTRY_POINT
            + '[project.optional-dependencies]\nvllm = ["vllm==0.6.0"]\n'
        },
    )
    ledger = compare_pins(repo.root, CompareOptions(history=""))
    assert [(c.header, c.pin.origin) for c in ledger.columns] == [
        ("0.5.0", "constant"),
        ("0.6.0", "extra"),
    ]


def test_bad_inputs(tmp_path):
    with pytest.raises(InputError, match="not inside a git repository"):
        compare_pins(tmp_path, CompareOptions())
    repo = GitRepo(tmp_path / "empty")
    with pytest.raises(InputError, match="no commits"):
        compare_pins(repo.root, CompareOptions())
    repo.commit("one", {"pyproject.toml": pyproject("0.1.0")})
    with pytest.raises(InputError, match="names no commit"):
        compare_pins(repo.root, CompareOptions(history="no-such-ref"))
