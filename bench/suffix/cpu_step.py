"""CPU cost of the proposer's per-step work (add_active_response + speculate).

Replays a gpu_speed.py record (phases a, b, c on one cache, like the engine),
or its synthetic stand-in, through ``replay.replay`` and reports the time our
cache spends per request per engine step: the ``add_active_response`` of the
step's new tokens plus the ``speculate`` on the numpy int64 pattern vLLM
passes. Best of ``--repeat`` runs (2 cores, noisy).

    python bench/suffix/cpu_step.py --pairs /work/.device/8/suffix_gpu.record.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from costmodel import StepCost  # noqa: E402
from replay import PHASES, make_cache, parse_policy, replay  # noqa: E402
from workloads import copy_record  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", default="synthetic")
    ap.add_argument("--policies", nargs="+", default=["cost", "nodraft"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--depth", type=int, default=64)
    ap.add_argument("--num-spec", type=int, default=32)
    a = ap.parse_args()
    record = copy_record() if a.pairs == "synthetic" else json.loads(Path(a.pairs).read_text())
    print(
        f"| policy | phase | requests/step | µs per request per step (best of {a.repeat}) | speculate p50 µs |"
    )
    print("|---|---|---|---|---|")
    for spec in a.policies:
        pol = parse_policy(spec)
        best: dict = {}
        for _ in range(a.repeat):
            cache = make_cache(pol, a.depth, 100)
            for name, conc in PHASES:
                ph = record["phases"][name]
                pairs = list(zip(ph["prompts"], ph["outputs"]["none"]))
                r = replay(
                    cache, pairs, a.depth, a.num_spec, conc, pol, StepCost(), prefix=f"{name}-"
                )
                v = (r["propose_us_per_req_step"], r["speculate_us"]["p50"], conc or len(pairs))
                if name not in best or v[0] < best[name][0]:
                    best[name] = v
        for name, _ in PHASES:
            us, p50, conc = best[name]
            print(f"| {spec} | {name} | {conc} | {us:.1f} | {p50:.1f} |", flush=True)


if __name__ == "__main__":
    main()
