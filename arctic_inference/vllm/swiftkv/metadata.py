"""Attention metadata for running the SwiftKV layers on the logits tokens only.

In a batch that contains prompt tokens, the SwiftKV layers only need the last
scheduled token of each request (the one whose logits are sampled). Their
K/V for every token are already in the cache (bulk write), so the attention
becomes a one-query-per-request attention over the cached sequence: the
``query_start_loc`` becomes ``0..num_reqs``, everything else that describes the
KV side (``seq_lens``, ``block_table``) stays. Precomputed schedules and
cascade splits (and a forest plan of the FlashAttention fork) belong to the
full batch and are dropped.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

# Metadata classes whose fields this module knows how to restrict.
_SUPPORTED = ("FlashAttentionMetadata", "TritonAttentionMetadata")


class UnsupportedAttentionMetadata(RuntimeError):
    """The backend's metadata is not one SwiftKV can restrict to logits tokens."""


def logits_token_indices(meta: Any) -> torch.Tensor:
    """Index of the last scheduled token of each request (what vLLM samples)."""
    return (meta.query_start_loc[1:] - 1).to(torch.int64)


def has_prompt_tokens(meta: Any) -> bool:
    """Whether the batch has more tokens than requests (prefill or chunk)."""
    num_reqs = meta.query_start_loc.shape[0] - 1
    return meta.max_query_len > 1 and meta.num_actual_tokens > num_reqs


def restrict_to_logits_tokens(meta: Any, indices: torch.Tensor) -> Any:
    """A copy of ``meta`` describing one query token per request."""
    name = type(meta).__name__
    if name not in _SUPPORTED:
        raise UnsupportedAttentionMetadata(
            f"SwiftKV prefill needs FLASH_ATTN or TRITON_ATTN, but the attention backend "
            f"produced {name}; choose attention_backend='FLASH_ATTN' or 'TRITON_ATTN'."
        )
    num_reqs = indices.shape[0]
    changes: dict[str, Any] = dict(
        num_actual_tokens=num_reqs,
        max_query_len=1,
        query_start_loc=torch.arange(
            num_reqs + 1, dtype=meta.query_start_loc.dtype, device=meta.query_start_loc.device
        ),
        slot_mapping=meta.slot_mapping[indices],
        use_cascade=False,
        common_prefix_len=0,
        cu_prefix_query_lens=None,
        prefix_kv_lens=None,
        suffix_kv_lens=None,
        scheduler_metadata=None,
        prefix_scheduler_metadata=None,
    )
    if hasattr(meta, "max_num_splits"):
        changes["max_num_splits"] = 0
    if hasattr(meta, "forest"):  # the FlashAttention fork: its plan groups the full batch
        changes["forest"] = None
    return dataclasses.replace(meta, **changes)
