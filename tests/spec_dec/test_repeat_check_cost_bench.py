"""``bench/spec/repeat_check_cost.py``: its two texts are what they claim, and the report
holds both ways for every case."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "spec"))
import repeat_check_cost  # noqa: E402


def test_copied_text_is_a_span_of_the_prompt_written_where_the_runner_keeps_it():
    batch = repeat_check_cost.TextBatch(size=2, prompt_len=16, lifetime=8, copies=True, seed=0)
    start = batch.copy_from.copy()
    for _ in range(8):
        batch.step(8)
    assert list(batch.num_tokens_no_spec) == [24, 24]
    for row in range(2):
        prompt = batch.token_ids_cpu[row, :16]
        assert list(batch.token_ids_cpu[row, 16:24]) == list(prompt[start[row] : start[row] + 8])
    first = list(batch.req_ids)
    batch.step(8)  # both finished: replaced, and the new ones start over
    assert set(batch.req_ids).isdisjoint(first) and list(batch.num_tokens_no_spec) == [17, 17]


def test_fresh_text_is_written_out_too():
    batch = repeat_check_cost.TextBatch(size=1, prompt_len=16, lifetime=8, copies=False, seed=0)
    sampled = [batch.step(8)[0][0] for _ in range(5)]
    assert list(batch.token_ids_cpu[0, 16:21]) == sampled
    assert batch.num_tokens_no_spec[0] == 21


def test_a_copy_longer_than_the_prompt_is_refused():
    with pytest.raises(ValueError, match="lifetime"):
        repeat_check_cost.TextBatch(size=1, prompt_len=8, lifetime=9, copies=True, seed=0)


def test_report_has_both_ways_for_every_case_and_tells_copies_from_fresh_text(tmp_path):
    out = tmp_path / "cost.json"
    args = ["--reps", "2", "--steps", "300", "--batches", "1,2", "--prompt", "64"]
    assert repeat_check_cost.main([*args, "--lifetime", "32", "--json", str(out)]) == 0
    cases = json.loads(out.read_text())["cases"]
    assert set(cases) == {"fresh-batch1", "fresh-batch2", "copy-batch1", "copy-batch2"}
    for case in cases.values():
        assert set(case["us_per_step"]) == {"defer", "check"}
        for s in case["us_per_step"].values():
            assert 0 < s["min"] <= s["median"] <= s["max"]
    # Copied text promises drafts on nearly every step, text that does not repeat on
    # almost none (one token seen once before is not evidence, REPEAT_PROMISE).
    for size in (1, 2):
        assert cases[f"copy-batch{size}"]["promising_share"]["min"] > 0.8
        assert cases[f"fresh-batch{size}"]["promising_share"]["max"] < 0.05


@pytest.mark.parametrize(
    "bad",
    [
        ["--reps", "0"],
        ["--steps", "0"],
        ["--batches", "1,x"],
        ["--batches", "0"],
        ["--lifetime", "300"],
    ],
)
def test_bad_settings_exit_with_a_usage_error(bad):
    with pytest.raises(SystemExit) as exc:
        repeat_check_cost.main(bad)
    assert exc.value.code == 2


def test_the_drafter_is_the_real_one():
    """The bench times the proposer's own code: promise is HybridDrafter.promise."""
    drafter = repeat_check_cost.HybridDrafter(repeat_check_cost.SUFFIX, 3, 1 << 20)
    batch = repeat_check_cost.TextBatch(size=1, prompt_len=32, lifetime=16, copies=True, seed=1)
    for _ in range(6):
        promised = repeat_check_cost.check_step(drafter, batch, batch.step(16))
    assert promised >= repeat_check_cost.REPEAT_PROMISE
    assert set(drafter.cache.active_requests) == {batch.req_ids[0]}
    assert np.all(batch.age == 6)
