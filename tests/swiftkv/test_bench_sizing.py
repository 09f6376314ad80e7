"""Phase sizing of the SwiftKV GPU bench (every timed phase must last >= 10 s)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "swiftkv" / "gpu_speed.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("swiftkv_gpu_speed", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_loops_give_the_margin_over_the_minimum(bench):
    # 0.15 s per prefill batch (32 x 2k tokens): 10 s x 1.3 needs 87 batches.
    assert bench.loops_for(0.15, 10.0) == 87
    assert 87 * 0.15 >= 1.3 * 10.0 > 86 * 0.15
    assert bench.loops_for(20.0, 10.0) == 1
    with pytest.raises(ValueError, match="must be positive"):
        bench.loops_for(0.0, 10.0)


def test_short_phase_is_rescaled_past_the_minimum(bench):
    # 45 batches lasted 6.7 s (the recorded short phase): the retry must reach 13 s.
    loops = bench.rescaled_loops(45, 6.7, 10.0)
    assert loops * 6.7 / 45 >= 13.0
    # Never fewer batches than before, even when the phase was just under.
    assert bench.rescaled_loops(100, 9.99, 10.0) > 100


class _FakeTimedEngine:
    """Times a batch at a fixed cost, like the serve process answers."""

    def __init__(self, per_batch: float) -> None:
        self.per_batch = per_batch
        self.calls: list[int] = []

    def run(self, loops: int, **cmd) -> dict:
        self.calls.append(loops)
        return {"seconds": loops * self.per_batch}


def test_calibration_doubles_until_the_run_is_long_enough(bench):
    engine = _FakeTimedEngine(0.15)
    assert bench.calibrate(engine, {}, seconds=2.0) == pytest.approx(0.15)
    assert engine.calls == [1, 2, 4, 8, 16]
