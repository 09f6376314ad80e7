"""Probe files in the JSON form of the rebase workflow: ``{"probes": [{label, file, regex,
dotall, all}]}``, read by ``compare-pins --probes`` over a real git history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import invoke
from history_gitrepo import GitRepo, pyproject

from rebasekit.cli import app
from rebasekit.errors import InputError
from rebasekit.history.probes import load_probes

PROBES = Path(__file__).parent / "fixtures_real" / "probes"

RUNNER_OLD = """\
import os
os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "0"

def _capture(self,
             sizes):
    return run(sizes=sizes, mode=mode,)
"""
RUNNER_NEW = """\
import os
os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "0"

def _capture(self,
             sizes, keys):
    return run(sizes=sizes, keys=keys, mode=mode,)
"""


def _ledger(tmp_path: Path, probes: Path) -> tuple[int, dict]:
    repo = GitRepo(tmp_path / "r")
    repo.commit(
        "pin 0.9.2",
        {
            "pyproject.toml": pyproject("0.9.2"),
            "plug/attn.py": "k, v = kv_cache.unbind(0)\n",
            "plug/runner.py": RUNNER_OLD,
        },
    )
    repo.commit(
        "pin 0.10.1",
        {
            "pyproject.toml": pyproject("0.10.1"),
            "plug/attn.py": "k, v = kv_cache.unbind(1)\n",
            "plug/runner.py": RUNNER_NEW,
        },
    )
    res = invoke(
        app, ["compare-pins", "--repo", repo.root, "--history", "--probes", probes, "--json"]
    )
    return res.exit_code, json.loads(res.stdout)


def test_workflow_json_probes_fill_the_ledger(tmp_path):
    code, ledger = _ledger(tmp_path, PROBES / "workflow_probes.json")
    assert code == 0
    pins = {c["id"]: c["pin"] for c in ledger["columns"]}
    old = next(k for k, v in pins.items() if v == "0.9.2")
    new = next(k for k, v in pins.items() if v == "0.10.1")
    rows = {r["label"]: r["cells"] for r in ledger["rows"]}
    assert rows["KV-cache unbind axis"][old]["value"] == "0"
    assert rows["KV-cache unbind axis"][new]["value"] == "1"
    # dotall: the match spans lines, whitespace folded
    assert rows["capture sizes"][old]["value"] == "self, sizes"
    assert rows["capture sizes"][new]["value"] == "self, sizes, keys"
    # all: every match, in order
    assert rows["every forwarded kwarg"][new]["value"] == "sizes, keys, mode"
    # a probe whose value did not move
    assert rows["V2 runner forced"][old]["value"] == rows["V2 runner forced"][new]["value"] == "0"


def test_probe_that_matches_nothing_is_missing_not_empty(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(
            {"probes": [{"label": "gone", "file": "plug/attn.py", "regex": "unbind\\((\\d)\\)x"}]}
        )
    )
    code, ledger = _ledger(tmp_path, path)
    cells = ledger["rows"][0]["cells"]
    assert code == 0 and cells and all(c["value"] is None for c in cells.values())
    assert {c["missing"] for c in cells.values()} == {"no match"}


def test_workflow_keys_map_to_probe_fields():
    probes = {p.label: p for p in load_probes(PROBES / "workflow_probes.json")}
    assert probes["capture sizes"].dotall and not probes["capture sizes"].all_matches
    assert probes["every forwarded kwarg"].all_matches
    assert probes["KV-cache unbind axis"].kind == "regex"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("wrong_key.json", r"defines no probes \(its top level has probe_list\)"),
        ("bad_regex.json", "bad regex"),
        ("not_json.json", "is not valid JSON"),
    ],
)
def test_malformed_json_probe_file_names_the_file(name, message):
    with pytest.raises(InputError, match=message) as info:
        load_probes(PROBES / name)
    assert name in str(info.value)


def test_both_list_keys_is_an_error(tmp_path):
    path = tmp_path / "both.json"
    path.write_text(json.dumps({"probe": [{"label": "a", "pin": True}], "probes": []}))
    with pytest.raises(InputError, match="both 'probe' and 'probes'"):
        load_probes(path)


def test_malformed_probe_file_through_the_cli_exits_2_with_the_fix(tmp_path):
    repo = GitRepo(tmp_path / "r")
    repo.commit("pin", {"pyproject.toml": pyproject("0.9.2")})
    res = invoke(app, ["compare-pins", "--repo", repo.root, "--probes", PROBES / "wrong_key.json"])
    assert res.exit_code == 2
    assert "wrong_key.json defines no probes" in res.stderr
    assert '{"probes": [' in res.stderr
    assert "Traceback" not in res.output
