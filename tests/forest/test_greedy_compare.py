"""The end-to-end forest check's comparison logic, on hand-built runs (no GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from greedy_compare import compare  # noqa: E402


def _run(ids, lps, tops):
    return {"outputs": ids, "logprobs": lps, "top": tops}


def test_identical_runs_have_no_divergence_and_no_movement():
    run = _run([[5, 6]], [[-0.1, -0.2]], [[{"5": -0.1, "9": -2.0}, {"6": -0.2, "7": -1.0}]])
    c = compare(run, run)
    assert (c.identical, c.requests, c.divergences, c.agreed_delta) == (1, 1, (), 0.0)
    assert c.all_near_ties


def test_a_flip_within_twice_the_agreed_movement_is_a_near_tie():
    ref = _run(
        [[5, 6, 1]],
        [[-0.50, -0.70, -0.1]],
        [[{"5": -0.50}, {"6": -0.70, "8": -0.75, "3": -3.0}, {"1": -0.1}]],
    )
    other = _run([[5, 8, 2]], [[-0.47, -0.69, -0.3]], [[{}, {}, {}]])
    c = compare(ref, other)
    assert c.identical == 0
    (d,) = c.divergences
    assert (d.request, d.position, d.ref_token, d.other_token) == (0, 1, 6, 8)
    assert d.gap == pytest.approx(0.05)
    assert c.agreed_delta == pytest.approx(0.03)  # only position 0 is agreed
    assert c.near_tie(d)  # 0.05 <= 2 * 0.03


def test_a_flip_far_above_the_agreed_movement_is_not_a_near_tie():
    ref = _run([[5, 6]], [[-0.5, -0.1]], [[{"5": -0.5}, {"6": -0.1, "8": -2.6}]])
    other = _run([[5, 8]], [[-0.49, -0.2]], [[{}, {}]])
    c = compare(ref, other)
    (d,) = c.divergences
    assert d.gap == pytest.approx(2.5)
    assert not c.near_tie(d) and not c.all_near_ties


def test_a_token_outside_the_reference_top_k_is_never_a_near_tie():
    ref = _run([[5]], [[-0.1]], [[{"5": -0.1, "4": -1.5}]])
    other = _run([[9]], [[-0.2]], [[{}]])
    c = compare(ref, other)
    (d,) = c.divergences
    assert d.gap is None and d.gap_floor == pytest.approx(1.4)
    assert not c.all_near_ties


def test_runs_of_different_request_counts_are_refused():
    run = _run([[1]], [[-0.1]], [[{"1": -0.1}]])
    with pytest.raises(ValueError, match="request counts"):
        compare(run, _run([[1], [1]], [[-0.1], [-0.1]], [[{}], [{}]]))


def test_gaps_are_infinite_outside_the_reference_top_k():
    ref = _run([[5], [6]], [[-0.1], [-0.2]], [[{"5": -0.1, "4": -1.5}], [{"6": -0.2, "7": -0.7}]])
    other = _run([[9], [7]], [[-0.2], [-0.3]], [[{}], [{}]])
    assert compare(ref, other).gaps() == [float("inf"), pytest.approx(0.5)]
