"""The benches' host profile: steps counted right, times per step, no silent empty profile."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from host_profile import host_profile  # noqa: E402

THIS_FILE = Path(__file__).name


def execute_model() -> None:
    """Stands in for the runner's step: burns a little host time."""
    end = time.perf_counter() + 0.002
    while time.perf_counter() < end:
        pass


def _helper() -> None:
    pass


def _workload(steps: int) -> None:
    for _ in range(steps):
        execute_model()
        _helper()
        _helper()


def test_steps_are_counted_as_calls_of_the_step_function():
    profile = host_profile(lambda: _workload(7), step_function=f"{THIS_FILE}:execute_model")
    assert profile["steps"] == 7
    by_name = {r["function"].rsplit(":", 1)[-1]: r for r in profile["by_total_time"]}
    assert by_name["execute_model"]["calls_per_step"] == 1.0
    # Each step burns at least 2 ms inside execute_model (a lower bound by construction).
    assert by_name["execute_model"]["total_ms_per_step"] >= 2.0
    helper = {
        r["function"].rsplit(":", 1)[-1]: r
        for r in profile["by_self_time"] + profile["by_total_time"]
    }
    assert helper["_helper"]["calls_per_step"] == 2.0
    assert profile["wall_ms_per_step_under_cprofile"] >= 2.0


def test_a_given_step_count_divides_the_same_totals():
    counted = host_profile(lambda: _workload(4), steps=2)
    assert counted["steps"] == 2
    rows = {r["function"].rsplit(":", 1)[-1]: r for r in counted["by_total_time"]}
    assert rows["execute_model"]["calls_per_step"] == 2.0


def test_a_run_without_a_step_is_an_error_not_a_division():
    with pytest.raises(ValueError, match="made no steps"):
        host_profile(lambda: _workload(0), step_function=f"{THIS_FILE}:execute_model")
    # Same name in another file is not this runner's step.
    with pytest.raises(ValueError, match="made no steps"):
        host_profile(lambda: _workload(3), step_function="gpu_model_runner.py:execute_model")


def test_exactly_one_way_to_count_steps():
    with pytest.raises(ValueError, match="exactly one"):
        host_profile(lambda: None)
    with pytest.raises(ValueError, match="exactly one"):
        host_profile(lambda: None, steps=1, step_function="a.py:b")


def test_the_profiler_is_off_after_a_failing_run():
    def boom() -> None:
        raise RuntimeError("engine died")

    with pytest.raises(RuntimeError, match="engine died"):
        host_profile(boom, steps=1)
    # A profiler left enabled would make this second profile fail (one at a time).
    assert host_profile(lambda: _workload(1), steps=1)["steps"] == 1
