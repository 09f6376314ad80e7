"""Sizing the top stack's batch in the prefill path to a captured CUDA-graph size.

In a batch with prompt tokens only one token per request runs the SwiftKV
layers. Piecewise CUDA graphs exist only for vLLM's capture sizes, so that
count is padded up to the next capture size and the extra rows repeat the last
real token (their results are dropped; the attention metadata counts only the
real ones).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

import torch


def graph_size(num_tokens: int, capture_sizes: Sequence[int]) -> int | None:
    """Smallest capture size holding ``num_tokens`` (None: larger than all of them)."""
    sizes = sorted(capture_sizes)
    i = bisect_left(sizes, num_tokens)
    return sizes[i] if i < len(sizes) else None


def pad_indices(indices: torch.Tensor, rows: int) -> torch.Tensor:
    """``indices`` extended to ``rows`` entries by repeating its last entry."""
    n = indices.shape[0]
    if rows < n or n == 0:
        raise ValueError(f"cannot pad {n} indices to {rows} rows")
    if rows == n:
        return indices
    return torch.cat([indices, indices[-1:].expand(rows - n)])
