"""Host time of hybrid's check for repeating text on a step without drafts.

While the cost rule holds every draft back at a batch of up to four, each such
step asks the suffix trees whether the text repeats again
(``HybridDrafter.promise``): the trees take the step's tokens at once instead of
when drafting resumes, and each request's suffix draft is looked up for its
score. Where nothing repeats, the check never leads to drafts, so every step
pays it. Two ways, side by side on one CPU, both through the real drafter:

* ``defer``: the step without drafts as it was before the check (the tokens
  wait in ``DeferredFollow``);
* ``check``: the same step, then ``promise``.

Text: ``fresh`` draws every token at random (nothing repeats; small-llama's
random-weight output), ``copy`` has every request copy a span of its own prompt
(copy-llama's workload; the promise is high). Requests have 256-token prompts
and live 128 steps; tree depth and draft length are the GPU bench's (24, 16).
A phase is a fixed number of steps with new trees, by default about one 10 s phase
of the GPU bench one at a time (7,000 steps), so that the trees hold what they
hold there: on text that does not repeat the global tree's chance matches grow
with what it holds. Phases alternate between the two ways, each repeated;
reported: microseconds per step, median (min-max), the added time per step, and
the share of steps whose promise would re-probe suffix drafts.

    python bench/spec/repeat_check_cost.py [--reps 5] [--steps 7000] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from follow_cost import Batch, summary

from arctic_inference.vllm.spec_dec.hybrid import HybridDrafter, SuffixSettings
from arctic_inference.vllm.spec_dec.proposer import REPEAT_PROMISE

# vLLM 0.26.0's defaults for the suffix fields of SpeculativeConfig.
SUFFIX = SuffixSettings(
    max_tree_depth=24, max_cached_requests=10_000, max_spec_factor=1.0, min_token_prob=0.1
)
DRAFT_TOKENS = 16  # the GPU bench's num_speculative_tokens for suffix and hybrid
ARCTIC_TOKENS = 3
VOCAB = 348  # the GPU models' tokenizer


class TextBatch(Batch):
    """``follow_cost.Batch`` with each row's text written out as the runner keeps it
    (``num_tokens_no_spec``), so that the trees can be asked for drafts."""

    def __init__(self, size: int, prompt_len: int, lifetime: int, copies: bool, seed: int) -> None:
        if copies and lifetime > prompt_len:
            raise ValueError("a copied span must fit in the prompt: lifetime <= prompt length")
        self.copies = copies
        self.lifetime = lifetime
        self.num_tokens_no_spec = np.full(size, prompt_len)
        self.copy_from = np.zeros(size, dtype=np.int64)
        super().__init__(size, prompt_len, prompt_len + lifetime + 1, VOCAB, seed)

    def _admit(self, row: int) -> None:
        super()._admit(row)
        self.num_tokens_no_spec[row] = self.prompt_len
        self.copy_from[row] = self.rng.integers(0, self.prompt_len - self.lifetime + 1)

    def step(self, lifetime: int) -> list[list[int]]:
        self.replace_finished(lifetime)
        sampled = []
        for row in range(len(self.req_ids)):
            if self.copies:
                token = int(self.token_ids_cpu[row, self.copy_from[row] + self.age[row]])
            else:
                token = int(self.rng.integers(0, self.vocab))
            self.token_ids_cpu[row, self.num_tokens_no_spec[row]] = token
            self.num_tokens_no_spec[row] += 1
            sampled.append([token])
        self.age += 1
        return sampled


def _no_drafts(drafter: HybridDrafter, batch: TextBatch, sampled: list[list[int]]) -> None:
    drafter.combine(batch, sampled, None, [], lambda rows: {}, DRAFT_TOKENS, drafting=False)


def defer_step(drafter: HybridDrafter, batch: TextBatch, sampled: list[list[int]]) -> float:
    _no_drafts(drafter, batch, sampled)
    return 0.0


def check_step(drafter: HybridDrafter, batch: TextBatch, sampled: list[list[int]]) -> float:
    _no_drafts(drafter, batch, sampled)
    return drafter.promise(batch, len(sampled), DRAFT_TOKENS)


WAYS: dict[str, Callable[[HybridDrafter, TextBatch, list[list[int]]], float]] = {
    "defer": defer_step,
    "check": check_step,
}


def phase(way: str, batch: TextBatch, steps: int) -> tuple[float, float]:
    """Seconds spent in the steps' drafter work, and the share of steps
    whose promise reached ``REPEAT_PROMISE`` (where the proposer would re-probe suffix
    drafts, cooldown permitting)."""
    drafter = HybridDrafter(SUFFIX, ARCTIC_TOKENS, max_model_len=1 << 20)
    run = WAYS[way]
    spent, promising = 0.0, 0
    for _ in range(steps):
        sampled = batch.step(batch.lifetime)
        t0 = time.perf_counter()
        promised = run(drafter, batch, sampled)
        spent += time.perf_counter() - t0
        promising += promised >= REPEAT_PROMISE
    return spent, promising / steps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=7000, help="length of each phase")
    ap.add_argument("--batches", default="1,4", help="comma list of batch sizes")
    ap.add_argument("--prompt", type=int, default=256)
    ap.add_argument("--lifetime", type=int, default=128, help="tokens each request generates")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    try:
        batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        ap.error(f"--batches: not a comma list of integers: {args.batches!r}")
    if args.reps < 1 or args.steps < 1 or args.lifetime < 1 or min(batches) < 1:
        ap.error("--reps, --steps, --lifetime and every batch size must be positive")
    if args.lifetime > args.prompt:
        ap.error("--lifetime must not exceed --prompt (the copied text is a span of the prompt)")
    report: dict = {"settings": vars(args) | {"json": str(args.json) if args.json else None}}
    cases = {}
    for text in ("fresh", "copy"):
        for size in batches:
            us: dict[str, list[float]] = {way: [] for way in WAYS}
            added: list[float] = []
            promising: list[float] = []
            for rep in range(args.reps):
                order = list(WAYS) if rep % 2 == 0 else list(reversed(WAYS))
                this_rep = {}
                for way in order:
                    batch = TextBatch(size, args.prompt, args.lifetime, text == "copy", seed=rep)
                    spent, share = phase(way, batch, args.steps)
                    this_rep[way] = spent / args.steps * 1e6
                    us[way].append(this_rep[way])
                    if way == "check":
                        promising.append(share)
                added.append(this_rep["check"] - this_rep["defer"])
            name = f"{text}-batch{size}"
            cases[name] = {
                "us_per_step": {way: summary(v) for way, v in us.items()},
                "added_us_per_step": summary(added),
                "promising_share": summary(promising),
            }
            a = cases[name]["added_us_per_step"]
            print(
                f"{name}: defer {statistics.median(us['defer']):.1f} us/step, check "
                f"{statistics.median(us['check']):.1f} us/step; the check adds "
                f"{a['median']:.1f} us ({a['min']:.1f}-{a['max']:.1f}); promise of "
                f"{REPEAT_PROMISE:g}+ tokens on {100 * statistics.median(promising):.1f} % of steps",
                flush=True,
            )
    report["cases"] = cases
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
