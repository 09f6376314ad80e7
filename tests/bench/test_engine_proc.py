"""The benches' engine processes: a pinned engine and what it starts stay on its cores."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from engine_proc import EngineProcess, core_sets, engine_cpus  # noqa: E402

# A child that reports its own CPU set and the one of a process it starts.
CHILD = textwrap.dedent(
    """
    import json, os, subprocess, sys
    grandchild = subprocess.run(
        [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    print(json.dumps({"ready": True, "mine": sorted(os.sched_getaffinity(0)),
                      "started": grandchild}), flush=True)
    """
)


def test_core_sets_are_disjoint_and_leave_the_parent_a_core():
    sets = core_sets(3, 4, list(range(16)))
    assert sets == [{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}]
    assert core_sets(2, 1, [5, 9, 7]) == [{5}, {7}]


def test_core_sets_that_do_not_fit_say_how_to_fix_it():
    with pytest.raises(ValueError, match="pin fewer cores per engine"):
        core_sets(4, 4, list(range(16)))  # 16 of 16: none left for the parent


def test_a_pinned_engine_and_its_children_run_on_its_cores(tmp_path):
    cores = sorted(os.sched_getaffinity(0))
    engine = EngineProcess("pinned", ["-c", CHILD], tmp_path / "pinned.log", cpus={cores[-1]})
    try:
        assert engine.info["mine"] == [cores[-1]]
        assert engine.info["started"] == str([cores[-1]])
    finally:
        engine.close()


def test_an_unpinned_engine_keeps_the_parents_cores(tmp_path):
    engine = EngineProcess("free", ["-c", CHILD], tmp_path / "free.log")
    try:
        assert engine.info["mine"] == sorted(os.sched_getaffinity(0))
    finally:
        engine.close()


def test_engine_cpus_pins_nothing_without_a_core_count():
    assert engine_cpus(3, 0) == [None, None, None]


def test_engine_cpus_uses_the_cores_this_process_may_use():
    mine = sorted(os.sched_getaffinity(0))
    if len(mine) < 2:
        pytest.skip("needs two cores: one engine core and one for the parent")
    assert engine_cpus(1, 1) == [{mine[0]}]
    with pytest.raises(ValueError, match="pin fewer cores per engine"):
        engine_cpus(1, len(mine))
