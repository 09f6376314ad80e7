"""The forest forward: grouped prefix call, causal suffix call, LSE merge.

1. Prefix: the queries of each group, gathered into group order, attend
   *non-causally* to the group's shared blocks, one virtual sequence per group, so
   each shared block is read once per group instead of once per request. Non-causal
   is exact because a group's prefix never reaches past any member's computed tokens.
2. Suffix: every request attends causally to its own blocks after its group prefix
   (all of its blocks when it is in no group); this writes the final output of
   ungrouped requests directly.
3. Merge: for grouped tokens the two partial results are combined by their
   log-sum-exp (``merge_attn_states``) and scattered back to their rows.

A static plan (:mod:`.static_plan`) runs the same three steps over every token, grouped
or not, with shapes fixed by the padded batch, so that a full CUDA graph can hold them.

The kernels are parameters (``attn_fn`` with ``flash_attn_varlen_func``'s keywords,
``merge_fn`` with ``merge_attn_states``'s), so the same code runs on the GPU with
vLLM's kernels and on the CPU with :mod:`.reference`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from arctic_inference.vllm.attention.plan import ForestPlan

__all__ = ["forest_attention"]


def forest_attention(
    *,
    output: torch.Tensor,
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    plan: ForestPlan,
    cu_seqlens_q: torch.Tensor,
    max_query_len: int,
    softmax_scale: float,
    attn_fn: Callable[..., Any],
    merge_fn: Callable[..., Any],
    softcap: float = 0.0,
    num_splits: int = 0,
    fa_version: int | None = None,
) -> torch.Tensor:
    """Attention of ``query`` (``(T, H, D)``) into ``output`` through ``plan``."""
    common: dict[str, Any] = dict(
        k=key_cache,
        v=value_cache,
        softmax_scale=softmax_scale,
        softcap=softcap,
        window_size=[-1, -1],  # no sliding window (such layers never get here)
        return_softmax_lse=True,
        num_splits=num_splits,
    )
    if fa_version is not None:
        common["fa_version"] = fa_version

    _, suffix_lse = attn_fn(
        q=query,
        out=output,
        cu_seqlens_q=cu_seqlens_q,
        max_seqlen_q=max_query_len,
        seqused_k=plan.suffix_seqused_k,
        max_seqlen_k=plan.max_suffix_kv_len,
        causal=True,
        block_table=plan.suffix_block_table,
        **common,
    )
    if plan.num_groups == 0 and not plan.static:
        return output

    rows = plan.prefix_token_index
    prefix_out, prefix_lse = attn_fn(
        q=query.index_select(0, rows),
        cu_seqlens_q=plan.prefix_cu_seqlens_q,
        max_seqlen_q=plan.max_prefix_query_len,
        seqused_k=plan.prefix_seqused_k,
        max_seqlen_k=plan.max_prefix_kv_len,
        causal=False,
        block_table=plan.prefix_block_table,
        **common,
    )
    merged = torch.empty_like(prefix_out)
    merge_fn(
        merged,
        prefix_out,
        prefix_lse,
        output.index_select(0, rows),
        suffix_lse.index_select(1, rows).contiguous(),
    )
    output.index_copy_(0, rows, merged)
    return output
