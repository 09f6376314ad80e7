"""The copy prompts the speculator GPU tests send: random documents that re-quote a span.

One definition for the in-process features test and the HTTP servers, so their draft
counters are for the same greedy work and can be compared.
"""

from __future__ import annotations

import random


def copy_prompts(vocab: int, n: int = 8, seed: int = 11) -> list[list[int]]:
    """``n`` prompts: 128 random tokens, then 32 of them again from a random start < 64."""
    rng = random.Random(seed)
    prompts = []
    for _ in range(n):
        doc = [rng.randrange(4, vocab) for _ in range(128)]
        start = rng.randrange(0, 64)
        prompts.append(doc + doc[start : start + 32])
    return prompts
