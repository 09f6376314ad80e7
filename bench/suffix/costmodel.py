"""Per-step cost model of a vLLM engine step, fitted from GPU step traces.

    step_ms = fixed[mode] + per_req * B + per_token * T + spec_step * [D > 0]

B: requests in the step, T: tokens it computes (one per decoding request plus
its draft tokens, or prompt tokens), D: draft tokens verified in it. ``mode``
is "none" (no speculation: vLLM may overlap scheduling with the GPU) or
"spec" (suffix: no async scheduling, proposer runs every step). Traces come
from ``gpu_speed.py`` (per step: start time, B, T, D); step time is the gap
to the next step of the same phase.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np


@dataclass
class StepCost:
    fixed_none_ms: float = 3.3  # first guesses from the first H200 run (eager copy-llama)
    fixed_spec_ms: float = 4.0
    per_req_ms: float = 0.01
    per_token_ms: float = 0.02
    spec_step_ms: float = 0.5

    def step_ms(self, spec: bool, reqs: int, tokens: int, drafts: int) -> float:
        base = self.fixed_spec_ms if spec else self.fixed_none_ms
        return (
            base
            + self.per_req_ms * reqs
            + self.per_token_ms * tokens
            + (self.spec_step_ms if drafts else 0.0)
        )

    @property
    def token_cost_ratio(self) -> float:
        """r = per-token cost / fixed step cost (the cost policy's ``token_cost``)."""
        return self.per_token_ms / max(1e-9, self.fixed_spec_ms + self.per_req_ms)

    @classmethod
    def load(cls, path: Path) -> StepCost:
        return cls(**json.loads(Path(path).read_text()))

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=1))


def steps_from_trace(trace: list, end_s: float) -> list[tuple[float, int, int, int]]:
    """(duration ms, B, T, D) per step from [(start_s, B, T, D), ...] and the phase end."""
    out = []
    for i, (t, b, n, d) in enumerate(trace):
        nxt = trace[i + 1][0] if i + 1 < len(trace) else end_s
        out.append(((nxt - t) * 1e3, int(b), int(n), int(d)))
    return out


def fit(samples: list[tuple[str, float, int, int, int]]) -> tuple[StepCost, dict]:
    """Least squares over (mode, ms, B, T, D) samples; robust to a few outliers.

    Steps slower than 5x the median (JIT compiles, GC pauses) are dropped.
    """
    arr = [(m, ms, b, n, d) for m, ms, b, n, d in samples if ms > 0]
    med = float(np.median([s[1] for s in arr]))
    arr = [s for s in arr if s[1] <= 5 * med]
    X = np.array([[m == "none", m != "none", b, n, d > 0] for m, _, b, n, d in arr], dtype=float)
    y = np.array([s[1] for s in arr])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    pred = X @ coef
    cost = StepCost(*(float(c) for c in coef))
    info = {
        "samples": len(arr),
        "dropped": len(samples) - len(arr),
        "rmse_ms": float(np.sqrt(np.mean((pred - y) ** 2))),
        "median_ms": med,
    }
    return cost, info


def samples_from_gpu_record(record: dict) -> list[tuple[str, float, int, int, int]]:
    """All step samples of a gpu_speed.py record file (its "traces" section)."""
    out = []
    for variant, phases in record["traces"].items():
        mode = "none" if variant == "none" else "spec"
        for ph in phases.values():
            for ms, b, n, d in steps_from_trace(ph["steps"], ph["end_s"]):
                out.append((mode, ms, b, n, d))
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="fit the step cost model from a gpu_speed.py record")
    ap.add_argument("record", type=Path)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    cost, info = fit(samples_from_gpu_record(json.loads(a.record.read_text())))
    print(
        json.dumps(
            {"cost": asdict(cost), "fit": info, "token_cost_ratio": cost.token_cost_ratio}, indent=1
        )
    )
    if a.out:
        cost.save(a.out)
