"""The benches' timed phase: rounds and time as asked, each round's time kept, stalls told
apart from a phase that is slow throughout."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from phase import Phase, most_stalled, spread, stall_share, timed_phase  # noqa: E402


class Rounds:
    """A workload whose k-th round takes ``seconds[k]`` on a clock the test owns."""

    def __init__(self, seconds: list[float], tokens: int = 100) -> None:
        self.seconds, self.tokens, self.now, self.asked = seconds, tokens, 0.0, []

    def clock(self) -> float:
        return self.now

    def __call__(self, k: int) -> int:
        self.asked.append(k)
        self.now += self.seconds[k]
        return self.tokens


def test_a_phase_runs_on_until_it_lasted_the_minimum_and_keeps_each_rounds_time():
    work = Rounds([3.0, 2.0, 4.0, 1.5, 9.0])
    phase = timed_phase(work, min_rounds=2, min_seconds=10.0, clock=work.clock)
    # 3 + 2 + 4 = 9 s is short of 10; the fourth round ends it at 10.5 s.
    assert phase.round_seconds == (3.0, 2.0, 4.0, 1.5)
    assert (phase.tokens, phase.rounds, phase.seconds) == (400, 4, 10.5)
    assert phase.tokens_per_s == pytest.approx(400 / 10.5)
    assert work.asked == [0, 1, 2, 3]  # each round is told its index (its prompts' seed)


def test_a_phase_long_enough_after_its_rounds_runs_exactly_those():
    work = Rounds([6.0, 6.0, 6.0])
    phase = timed_phase(work, min_rounds=2, min_seconds=10.0, clock=work.clock)
    assert (phase.rounds, phase.seconds) == (2, 12.0)


def test_a_phase_of_no_minimum_time_runs_one_round_and_none_is_refused():
    work = Rounds([0.5, 0.5])
    assert timed_phase(work, clock=work.clock).rounds == 1
    with pytest.raises(ValueError, match="at least one round"):
        timed_phase(work, min_rounds=0, clock=work.clock)


def test_stalls_are_the_rounds_far_slower_than_the_typical_one():
    steady = [1.0, 1.1, 0.9, 1.0, 1.2]
    assert stall_share(steady) == 0.0
    # One round of 4 s among rounds of 1 s: 4 of the phase's 8 s went to it.
    assert stall_share([1.0, 1.0, 4.0, 1.0, 1.0]) == pytest.approx(0.5)
    # A phase slow throughout has no stall: every round is its typical round.
    assert stall_share([2.0, 2.2, 1.9, 2.1]) == 0.0
    # Too few rounds for a typical one.
    assert stall_share([1.0, 5.0]) == 0.0


def test_a_phase_records_its_rounds_and_stall_share_for_a_bench_row():
    record = Phase(tokens=500, round_seconds=(1.0, 1.0, 1.0, 1.0, 1.000049), seconds=5.0).record()
    assert record["round_seconds"] == [1.0, 1.0, 1.0, 1.0, 1.0]  # kept to 0.1 ms
    assert (record["tok_per_s"], record["rounds"], record["stall_share"]) == (100.0, 5, 0.0)
    stalled = Phase(tokens=500, round_seconds=(1.0, 1.0, 4.0, 1.0, 1.0), seconds=8.0).record()
    assert stalled["stall_share"] == pytest.approx(0.5)


def test_spread_is_the_range_over_the_median():
    assert spread([0.95, 1.0, 1.05]) == pytest.approx(0.10)
    assert spread([2.0]) == 0.0
    with pytest.raises(ValueError):
        spread([])


def test_the_most_stalled_phase_is_unknown_when_any_phase_kept_no_round_times():
    assert most_stalled([0.1, 0.3, 0.0]) == 0.3
    assert most_stalled([0.1, None]) is None
    assert most_stalled([]) is None
