"""compare-pins through the CLI: table, markdown ledger, bad input, stable --write output."""

from __future__ import annotations

from cli_runner import StrictRunner as CliRunner
from history_gitrepo import GitRepo, pyproject

from rebasekit.cli import app


def make(tmp_path) -> GitRepo:
    repo = GitRepo(tmp_path / "r")
    repo.commit("first pin", {"pyproject.toml": pyproject("0.24.0")})
    repo.commit("bump", {"pyproject.toml": pyproject("0.26.0")})
    repo.branch("rebase/vllm_v0.27.0")
    repo.checkout("rebase/vllm_v0.27.0")
    repo.commit("rebase 0.27", {"pyproject.toml": pyproject("0.27.0")})
    repo.checkout("main")
    return repo


def invoke(*args):
    return CliRunner().invoke(app, ["compare-pins", *args])


def test_table_has_legend_with_branches_and_commits(tmp_path):
    repo = make(tmp_path)
    result = invoke("--repo", str(repo.root), "--history")
    assert result.exit_code == 0, result.output
    assert (
        "C1  0.24.0 (extra)" in result.output
        and "commit" in result.output
        and "first pin" in result.output
    )
    assert "branch main, tip" in result.output and "branch rebase/vllm_v0.27.0" in result.output


def test_write_is_stable_when_the_ledger_itself_is_committed(tmp_path):
    repo = make(tmp_path)
    out = repo.root / "EVOLUTION.md"
    assert invoke("--repo", str(repo.root), "--history", "--write", str(out)).exit_code == 0
    first = out.read_text()
    assert "`rebasekit compare-pins --history --write EVOLUTION.md`" in first
    assert "| C2 | 0.26.0 (extra) | branch main, as of " in first
    repo.commit("add ledger", {"EVOLUTION.md": first})  # HEAD moves; the ledger must not
    assert invoke("--repo", str(repo.root), "--history", "--write", str(out)).exit_code == 0
    assert out.read_text() == first
    repo.commit("bump torch", {"pyproject.toml": pyproject("0.26.0", bench="1.0")})
    invoke("--repo", str(repo.root), "--history", "--write", str(out))
    assert out.read_text() != first  # a change to a watched file is reflected


def test_bad_input_exits_2_without_traceback(tmp_path):
    repo = make(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text('[[probe]]\nlabel = "x"\nfile = "a"\nregex = "("\n')
    for args in (
        ["--repo", str(tmp_path / "nowhere")],
        ["--repo", str(repo.root), "--history", "nope"],
        ["--repo", str(repo.root), "--probes", str(bad)],
        ["--repo", str(repo.root), "--probes", str(tmp_path / "missing.toml")],
    ):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "error:" in result.output and "Traceback" not in result.output
