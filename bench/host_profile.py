"""Where an in-process engine's host time goes: one call of a workload under cProfile.

The small models the benches serve are host-bound (a step takes longer than its GPU
work), so the question a slow configuration raises is which Python functions fill its
step. cProfile slows Python-heavy code, so the wall time under it overstates the step;
the shares between functions, and the calls each makes per step, are what to read.

The forest bench profiles one rollouts round (every request decodes one token a step,
so the caller knows the step count); the speculator bench counts steps from the profile
itself, as the calls of the model runner's ``execute_model``, since a speculating
engine's steps each yield a varying number of tokens.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["STEP_FUNCTION", "host_profile"]

# The function called once per engine step in vLLM's V1 GPU model runner.
STEP_FUNCTION = "gpu_model_runner.py:execute_model"


def _calls_of(table: dict, function: str) -> int:
    """Primitive calls of ``file.py:name`` in a pstats table (0 when never called)."""
    file_name, _, name = function.rpartition(":")
    return sum(
        calls
        for (file, _, func), (calls, *_rest) in table.items()
        if func == name and Path(file).name == file_name
    )


def host_profile(
    run: Callable[[], Any],
    *,
    steps: int | None = None,
    step_function: str | None = None,
    top: int = 25,
) -> dict:
    """Run ``run()`` once under cProfile; per-step self and total times of the top functions.

    The step count is ``steps``, or the calls of ``step_function`` (``file.py:name``) the
    profile saw. A count of zero is an error, not a division: a profile with no step in it
    says nothing per step.
    """
    if (steps is None) == (step_function is None):
        raise ValueError("pass exactly one of steps and step_function")
    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.enable()
    try:
        run()
    finally:
        prof.disable()
    wall = time.perf_counter() - start
    table = pstats.Stats(prof).stats  # (file, line, name) -> (cc, calls, self s, total s, ...)
    count = steps if steps is not None else _calls_of(table, step_function or "")
    if count <= 0:
        raise ValueError(f"the profiled run made no steps (counted by {step_function or 'steps'})")

    def rows(column: int) -> list[dict]:
        ranked = sorted(table.items(), key=lambda kv: -kv[1][column])[:top]
        return [
            {
                "function": f"{Path(file).name}:{line}:{name}",
                "calls_per_step": calls / count,
                "self_ms_per_step": self_s * 1e3 / count,
                "total_ms_per_step": total_s * 1e3 / count,
            }
            for (file, line, name), (_, calls, self_s, total_s, _) in ranked
        ]

    return {
        "steps": count,
        "wall_ms_per_step_under_cprofile": wall * 1e3 / count,
        "by_self_time": rows(2),
        "by_total_time": rows(3),
    }
