"""The two calls the fork makes into forest code: plan in the builder, run in the impl.

Kept out of the fork so that the fork differs from upstream by a handful of lines.
"""

from __future__ import annotations

from typing import Any

import torch

from arctic_inference.vllm.attention.forward import forest_attention
from arctic_inference.vllm.attention.planner import STATS

__all__ = ["forest_applies", "forest_forward"]


def forest_applies(impl: Any, metadata: Any) -> bool:
    """Whether this layer can run the step's forest plan (else: upstream path).

    Per layer, because these are layer properties: ALiBi, a sliding window, attention
    sinks, an fp8 KV cache, multimodal prefix ranges, R-SWA and per-sequence causal
    masks are not part of the forest math.
    """
    from vllm.utils.torch_utils import is_quantized_kv_cache
    from vllm.v1.attention.backend import AttentionType

    return (
        getattr(metadata, "forest", None) is not None
        and impl.attn_type == AttentionType.DECODER
        and impl.alibi_slopes is None
        and tuple(impl.sliding_window) == (-1, -1)
        and impl.sinks is None
        and impl.dcp_world_size == 1
        and not is_quantized_kv_cache(impl.kv_cache_dtype)
        and metadata.causal is True
        and metadata.mm_prefix_range_tensor is None
        and metadata.rswa_prefix_lens is None
    )


def forest_forward(
    impl: Any,
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    output: torch.Tensor,
    metadata: Any,
) -> torch.Tensor:
    """Run the step's plan with vLLM's FlashAttention and merge kernels."""
    from vllm.v1.attention.backends.fa_utils import flash_attn_varlen_func
    from vllm.v1.attention.ops.merge_attn_states import merge_attn_states

    STATS["forward_calls"] += 1  # from Python: a replayed full graph runs no such call
    return forest_attention(
        output=output,
        query=query,
        key_cache=key_cache,
        value_cache=value_cache,
        plan=metadata.forest,
        cu_seqlens_q=metadata.query_start_loc,
        max_query_len=metadata.max_query_len,
        softmax_scale=impl.scale,
        softcap=impl.logits_soft_cap,
        num_splits=metadata.max_num_splits,
        fa_version=impl.vllm_flash_attn_version,
        attn_fn=flash_attn_varlen_func,
        merge_fn=merge_attn_states,
    )
