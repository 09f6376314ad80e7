"""``bench/spec/follow_cost.py``: both ways run on the same workload and the report says so."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "spec"))
import follow_cost  # noqa: E402


def test_the_workload_replaces_finished_requests_and_samples_every_row():
    batch = follow_cost.Batch(size=4, prompt_len=8, max_len=32, vocab=348, seed=0)
    first = list(batch.req_ids)
    for _ in range(3):
        sampled = batch.step(lifetime=3)
        assert len(sampled) == 4 and all(len(tokens) == 1 for tokens in sampled)
    assert batch.req_ids == first  # nobody has finished yet
    batch.step(lifetime=3)
    assert set(batch.req_ids).isdisjoint(first)  # all four were replaced at once
    assert batch.req_id_to_index == {r: i for i, r in enumerate(batch.req_ids)}


def test_report_has_both_ways_and_their_ratio(tmp_path, capsys):
    out = tmp_path / "cost.json"
    args = ["--reps", "2", "--seconds", "0.05", "--batch", "4", "--prompt", "16"]
    assert follow_cost.main([*args, "--lifetime", "8", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert set(report["us_per_step"]) == {"eager", "deferred"}
    for s in report["us_per_step"].values():
        assert 0 < s["min"] <= s["median"] <= s["max"]
    r = report["eager_over_deferred"]
    assert 0 < r["min"] <= r["median"] <= r["max"]
    assert "eager / deferred: x" in capsys.readouterr().out


def test_bad_settings_exit_with_a_usage_error():
    with pytest.raises(SystemExit) as exc:
        follow_cost.main(["--reps", "0"])
    assert exc.value.code == 2
