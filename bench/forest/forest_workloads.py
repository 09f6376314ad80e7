"""The three workloads of the forest benchmark (token ids only: the model is random).

* ``rollouts``: 8 prompts x n=16 samples, 4096-token prompts, 256 new tokens (RL rollouts).
* ``sysprompt``: 128 requests, one 2048-token system prompt + distinct 200-token questions,
  128 new tokens (few-shot serving / agent fleets).
* ``noshare``: 64 requests with no shared prefix, 1024-token prompts, 128 new tokens
  (the no-slowdown check).
"""

from __future__ import annotations

import dataclasses
import random

VOCAB_LOW, VOCAB_HIGH = 3, 340  # the shared tokenizer's ordinary ids (mk_tiny_model.py)


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    prompts: list[list[int]]
    n: int
    new_tokens: int

    @property
    def requests(self) -> int:
        return len(self.prompts) * self.n


def _tokens(rng: random.Random, count: int) -> list[int]:
    return [rng.randrange(VOCAB_LOW, VOCAB_HIGH) for _ in range(count)]


def make_workloads(seed: int = 0) -> dict[str, Workload]:
    rng = random.Random(seed)
    system = _tokens(rng, 2048)
    return {
        "rollouts": Workload(
            "rollouts", [_tokens(rng, 4096) for _ in range(8)], n=16, new_tokens=256
        ),
        "sysprompt": Workload(
            "sysprompt", [system + _tokens(rng, 200) for _ in range(128)], n=1, new_tokens=128
        ),
        "noshare": Workload(
            "noshare", [_tokens(rng, 1024) for _ in range(64)], n=1, new_tokens=128
        ),
    }


def shared_prefix_tokens(workload: Workload, block_size: int = 16) -> list[tuple[int, int]]:
    """(requests, shared tokens) per prefix group, block-aligned, for traffic estimates."""
    if workload.name == "rollouts":
        return [(workload.n, (len(p) - 1) // block_size * block_size) for p in workload.prompts]
    if workload.name == "sysprompt":
        return [(len(workload.prompts), 2048 // block_size * block_size)]
    return []
