"""A plain PyTorch stand-in for ``flash_attn_varlen_func`` and ``merge_attn_states``.

Same keyword interface as the subset of vLLM's ``flash_attn_varlen_func`` the forest
forward uses (paged KV through ``block_table`` + ``seqused_k``, varlen queries through
``cu_seqlens_q``, ``causal`` aligned to the end of the KV like FlashAttention, ``softcap``,
``return_softmax_lse`` with LSE shaped ``(num_heads, total_q)``). It computes in float32,
one sequence at a time: slow, obvious, and meant for tests on any device.
"""

from __future__ import annotations

import math
from typing import Any

import torch

__all__ = ["bf16_step", "reference_merge_attn_states", "reference_varlen_attention"]


def bf16_step(magnitude: float) -> float:
    """The spacing of bf16 values at ``magnitude``: the size of one more rounding there,
    which is what a two-pass attention (two stored partials, then a merge) may add."""
    return torch.finfo(torch.bfloat16).eps * 2.0 ** math.floor(math.log2(magnitude))


def reference_varlen_attention(
    *,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    max_seqlen_q: int,
    seqused_k: torch.Tensor,
    max_seqlen_k: int,
    softmax_scale: float,
    causal: bool,
    block_table: torch.Tensor,
    softcap: float = 0.0,
    return_softmax_lse: bool = False,
    out: torch.Tensor | None = None,
    window_size: list[int] | None = None,
    alibi_slopes: torch.Tensor | None = None,
    **_ignored: Any,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """``k``/``v``: ``(num_blocks, block_size, num_kv_heads, head_size)`` views."""
    if window_size not in (None, [-1, -1], (-1, -1)) or alibi_slopes is not None:
        raise NotImplementedError("the reference has no sliding window or ALiBi")
    total_q, num_heads, head_size = q.shape
    block_size, num_kv_heads = k.shape[1], k.shape[2]
    group = num_heads // num_kv_heads
    result = torch.empty((total_q, num_heads, v.shape[-1]), dtype=q.dtype, device=q.device)
    lse = torch.empty((num_heads, total_q), dtype=torch.float32, device=q.device)
    cu = cu_seqlens_q.tolist()
    used = seqused_k.tolist()
    for i in range(len(cu) - 1):
        start, end, kv_len = cu[i], cu[i + 1], int(used[i])
        if end == start:
            continue
        blocks = block_table[i, : -(-kv_len // block_size)].long()
        keys = k[blocks].reshape(-1, num_kv_heads, head_size)[:kv_len].float()
        values = v[blocks].reshape(-1, num_kv_heads, v.shape[-1])[:kv_len].float()
        keys = keys.repeat_interleave(group, dim=1)  # (kv, H, D)
        values = values.repeat_interleave(group, dim=1)
        query = q[start:end].float()  # (Lq, H, D)
        scores = torch.einsum("qhd,khd->hqk", query, keys) * softmax_scale
        if softcap > 0:
            scores = softcap * torch.tanh(scores / softcap)
        if causal:
            lq = end - start
            qpos = torch.arange(lq, device=q.device)[:, None] + (kv_len - lq)
            kpos = torch.arange(kv_len, device=q.device)[None, :]
            scores = scores.masked_fill(kpos > qpos, float("-inf"))
        seq_lse = torch.logsumexp(scores, dim=-1)  # (H, Lq)
        probs = torch.exp(scores - seq_lse[..., None])
        result[start:end] = torch.einsum("hqk,khd->qhd", probs, values).to(q.dtype)
        lse[:, start:end] = seq_lse
    if out is not None:
        out.copy_(result)
        result = out
    return (result, lse) if return_softmax_lse else result


def reference_merge_attn_states(
    output: torch.Tensor,
    prefix_output: torch.Tensor,
    prefix_lse: torch.Tensor,
    suffix_output: torch.Tensor,
    suffix_lse: torch.Tensor,
    output_lse: torch.Tensor | None = None,
) -> None:
    """LSE-weighted sum of two partial attentions over disjoint KV sets."""
    p = prefix_lse.float().transpose(0, 1)[..., None]  # (T, H, 1)
    s = suffix_lse.float().transpose(0, 1)[..., None]
    top = torch.maximum(p, s)
    wp, ws = torch.exp(p - top), torch.exp(s - top)
    merged = (wp * prefix_output.float() + ws * suffix_output.float()) / (wp + ws)
    output.copy_(merged.to(output.dtype))
    if output_lse is not None:
        output_lse.copy_((top + torch.log(wp + ws))[..., 0].transpose(0, 1))
