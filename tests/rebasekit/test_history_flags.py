"""Anomaly flags on crafted histories, through the real CLI (exit code = flags raised)."""

from __future__ import annotations

import json

import pytest
from cli_runner import StrictRunner as CliRunner
from history_gitrepo import GitRepo, pyproject

from rebasekit.cli import app
from rebasekit.history.ledger import flags_for

PROBES = """\
[[probe]]
label = "pin"
pin = true

[[probe]]
label = "layout"
file = "plug/attn.py"
returns = "Backend.get_kv_cache_shape"

[[probe]]
label = "torch"
file = "pyproject.toml"
requirement = "torch"
"""


def history(tmp_path, layouts: list[str | None], torches: list[str]) -> GitRepo:
    """One pin bump per entry; ``layouts`` is the attention fork's return value (None: no file)."""
    repo = GitRepo(tmp_path / "r")
    repo.commit("probes", {"probes/evolution_probes.toml": PROBES})
    for i, (layout, torch) in enumerate(zip(layouts, torches)):
        text = pyproject(f"0.{20 + i}.0").replace(
            'dependencies = ["packaging"]', f'dependencies = ["torch=={torch}"]'
        )
        attn = (
            None
            if layout is None
            else (
                f"class Backend:\n    @staticmethod\n    def get_kv_cache_shape(n, b):\n        return {layout}\n"
            )
        )
        repo.commit(f"vllm 0.{20 + i}", {"pyproject.toml": text, "plug/attn.py": attn})
    return repo


def run(repo, *args):
    result = CliRunner().invoke(
        app, ["compare-pins", "--repo", str(repo.root), "--history", "--json", *args]
    )
    return result.exit_code, (
        json.loads(result.stdout) if result.stdout.startswith("{") else result.output
    )


def flags(data):
    return sorted((f["code"], f["label"]) for f in data["flags"])


def test_stalled(tmp_path):
    code, data = run(
        history(
            tmp_path,
            ["(2, n, b)", "(n, 2, b)", "(n, b, 2)", "(n, b, 2)"],
            ["2.1", "2.2", "2.3", "2.4"],
        )
    )
    assert code == 1 and flags(data) == [("STALLED", "layout")]


def test_two_prior_bumps_needed_for_stalled(tmp_path):
    code, data = run(
        history(tmp_path, ["(2, n, b)", "(n, 2, b)", "(n, 2, b)"], ["2.1", "2.2", "2.3"])
    )
    assert code == 0 and flags(data) == []


def test_vanished(tmp_path):
    code, data = run(history(tmp_path, ["(2, n)", "(2, n)", None], ["2.1", "2.2", "2.2"]))
    assert code == 1 and flags(data) == [("VANISHED", "layout")]
    cell = data["rows"][1]["cells"][data["columns"][-1]["id"]]
    assert cell == {"value": None, "missing": "no file"}


def test_reverted(tmp_path):
    code, data = run(history(tmp_path, ["(2, n)", "(2, n)", "(2, n)"], ["2.1", "2.2", "2.1"]))
    assert code == 1 and flags(data) == [("REVERTED", "torch")]


def test_no_flags_exit_zero_and_reformatting_is_not_a_change(tmp_path):
    code, data = run(
        history(tmp_path, ["(2, n)", "(2,\n                n)", "(n, 2)"], ["2.1", "2.2", "2.3"])
    )
    assert code == 0, data
    values = [c["value"] for c in data["rows"][1]["cells"].values()]
    assert values == ["(2, n)", "(2, n)", "(n, 2)"]


@pytest.mark.parametrize(
    "seq, expected",
    [
        (["a", "b", "c", "c"], ["STALLED"]),
        (["a", "b", "a"], ["REVERTED"]),
        (["a", None], ["VANISHED"]),
        ([None, "a", None], ["VANISHED"]),
        (["a", "a", "a", "a"], []),
        (["a", "b", "c", "d"], []),
        (["a", "b", "b"], []),
        ([None, None], []),
    ],
)
def test_flag_rules(seq, expected):
    got = flags_for("x", [(f"C{i}", v) for i, v in enumerate(seq, 1)])
    assert [f.code for f in got] == expected
