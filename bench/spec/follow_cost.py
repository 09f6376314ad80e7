"""Host time of keeping the suffix cache in step with a batch over ``disable_by_batch_size``.

Over the cap nobody drafts; the engine still pays, on every step, for what the
suffix cache does with the sampled tokens. Two ways, side by side on one CPU:

* ``eager``: every step, each request's tokens go into its request tree and the
  global tree (vLLM 0.26.0's suffix proposer, and the plugin before deferral);
* ``deferred``: ``DeferredFollow`` notes the tokens and hands each request's
  over in one call when it leaves (nothing drafts again in this workload).

The workload is the GPU bench's batch of 32 in steady state: each request has a
256-token prompt and lives 128 steps, finished requests are replaced at once,
tokens drawn from copy-llama's 348-token vocabulary; the tree depth is vLLM's
default (24). Phases alternate between the two ways, each repeated; reported:
microseconds of follow work per engine step, median (min-max), and the ratio.

    python bench/spec/follow_cost.py [--reps 5] [--seconds 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from arctic_inference.suffix_decoding import SuffixDecodingCache
from arctic_inference.vllm.spec_dec.suffix_follow import (
    DeferredFollow,
    follow_request,
    stop_departed,
)


class Batch:
    """The parts of vLLM's ``InputBatch`` the followers read, kept as the runner keeps them."""

    def __init__(self, size: int, prompt_len: int, max_len: int, vocab: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.vocab = vocab
        self.prompt_len = prompt_len
        self.req_ids: list[str] = []
        self.req_id_to_index: dict[str, int] = {}
        self.num_prompt_tokens = np.full(size, prompt_len)
        self.token_ids_cpu = np.zeros((size, max_len), dtype=np.int64)
        self.age = np.zeros(size, dtype=np.int64)
        self.next_id = 0
        for row in range(size):
            self._admit(row)

    def _admit(self, row: int) -> None:
        req_id = f"req-{self.next_id}"
        self.next_id += 1
        if row < len(self.req_ids):
            del self.req_id_to_index[self.req_ids[row]]
            self.req_ids[row] = req_id
        else:
            self.req_ids.append(req_id)
        self.req_id_to_index[req_id] = row
        self.token_ids_cpu[row, : self.prompt_len] = self.rng.integers(
            0, self.vocab, self.prompt_len
        )
        self.age[row] = 0

    def replace_finished(self, lifetime: int) -> None:
        """Admit a new request in place of each that has generated ``lifetime`` tokens."""
        for row in np.flatnonzero(self.age >= lifetime):
            self._admit(int(row))

    def step(self, lifetime: int) -> list[list[int]]:
        """Replace the requests that finished, then sample one token for every row."""
        self.replace_finished(lifetime)
        tokens = self.rng.integers(0, self.vocab, len(self.req_ids))
        self.age += 1
        return [[int(t)] for t in tokens]


def _cache() -> SuffixDecodingCache:
    # vLLM's defaults for method="suffix": tree depth 24, 10,000 cached responses.
    return SuffixDecodingCache(max_tree_depth=24, max_cached_requests=10_000, policy=None)


def eager_phase(batch: Batch, cache, seconds: float, lifetime: int) -> tuple[float, int]:
    steps, spent, stop_at = 0, 0.0, time.perf_counter() + seconds
    while time.perf_counter() < stop_at:
        sampled = batch.step(lifetime)
        t0 = time.perf_counter()
        for i, tokens in enumerate(sampled):
            follow_request(cache, batch, i, tokens)
        stop_departed(cache, batch)
        spent += time.perf_counter() - t0
        steps += 1
    return spent, steps


def deferred_phase(batch: Batch, cache, seconds: float, lifetime: int) -> tuple[float, int]:
    follow = DeferredFollow(cache)
    steps, spent, stop_at = 0, 0.0, time.perf_counter() + seconds
    while time.perf_counter() < stop_at:
        sampled = batch.step(lifetime)
        t0 = time.perf_counter()
        follow.defer(batch, sampled)
        spent += time.perf_counter() - t0
        steps += 1
    return spent, steps


PHASES = {"eager": eager_phase, "deferred": deferred_phase}


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0, help="length of each phase")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--prompt", type=int, default=256)
    ap.add_argument("--lifetime", type=int, default=128, help="tokens each request generates")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.reps < 1 or args.seconds <= 0 or args.batch < 1 or args.lifetime < 1:
        ap.error("--reps, --seconds, --batch and --lifetime must be positive")
    per_step: dict[str, list[float]] = {name: [] for name in PHASES}
    ratios: list[float] = []
    for rep in range(args.reps):
        order = list(PHASES) if rep % 2 == 0 else list(reversed(PHASES))
        this_rep = {}
        for name in order:
            batch = Batch(args.batch, args.prompt, args.prompt + args.lifetime + 1, 348, seed=rep)
            spent, steps = PHASES[name](batch, _cache(), args.seconds, args.lifetime)
            this_rep[name] = spent / steps * 1e6
            per_step[name].append(this_rep[name])
            print(f"rep {rep} {name}: {this_rep[name]:.1f} us/step over {steps} steps", flush=True)
        ratios.append(this_rep["eager"] / this_rep["deferred"])

    report = {
        "settings": vars(args) | {"json": str(args.json) if args.json else None},
        "us_per_step": {name: summary(v) for name, v in per_step.items()},
        "eager_over_deferred": summary(ratios),
    }
    for name, s in report["us_per_step"].items():
        print(f"{name}: {s['median']:.1f} us/step ({s['min']:.1f}-{s['max']:.1f})")
    r = report["eager_over_deferred"]
    print(f"eager / deferred: x{r['median']:.2f} ({r['min']:.2f}-{r['max']:.2f})")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
