"""FP32 LM head: compute the vocabulary projection in fp32 without an fp32 weight.

Why: RL trainers score rollouts with logits computed in fp32. When vLLM
produces the same logits in bf16/fp16, every logit is rounded to 8 (or 11)
significant bits, and the sampled-token logprobs disagree with the trainer's
by far more than the algorithm tolerates (importance ratios drift). Keeping an
fp32 copy of the LM head weight would fix that at the cost of 2x the head's
memory (GiBs for 150k-token vocabularies), so instead the operands are upcast
on the fly, a bounded slice of the vocabulary at a time, and the projection
accumulates and returns in fp32.

Where: vLLM 0.26.0 routes *every* LM-head projection through
``LogitsProcessor._apply_head``: the regular logits path (``_get_logits``,
used by ``forward``/``compute_logits`` and therefore by the sampler and by
logprobs) and the greedy fast path ``get_top_tokens`` (the vocab-parallel
local argmax used by speculative drafters). Patching that one method covers
both. A quantized LM head (any quant method other than
``UnquantizedEmbeddingMethod``) is handed to vLLM unchanged: its weight is not
a plain matrix we could upcast.

Enabled by ``--fp32-lm-head`` / ``ARCTIC_FP32_LM_HEAD=1``. The patch is
applied when some engine in the process turns the knob on, but several engines
may share a process, so the switch is per ``LogitsProcessor``: its
``__init__`` (which vLLM runs while building the model, under
``set_current_vllm_config``) records the knob of the config the model is
built for, and ``_apply_head`` follows that record. A processor built before
the patch was applied has no record and keeps vLLM's projection.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from vllm.config import get_current_vllm_config_or_none
from vllm.model_executor.layers.logits_processor import LogitsProcessor
from vllm.model_executor.layers.vocab_parallel_embedding import (
    UnquantizedEmbeddingMethod,
)

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.rl_args import fp32_lm_head_enabled

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "FP32_FLAG_ATTR",
    "FP32LMHeadPatch",
    "fp32_head_projection",
    "uses_fp32_projection",
]

# Upper bound on the transient fp32 slice of the weight that exists at any
# moment. 64 MiB keeps the extra memory negligible next to the KV cache while
# the slices stay large enough (e.g. 4096 rows of a 4096-wide head) that the
# GEMMs run at full speed.
DEFAULT_CHUNK_BYTES = 64 * 1024 * 1024

_LOW_PRECISION = (torch.float16, torch.bfloat16)

# Per-LogitsProcessor switch, set by the patched __init__ from the config the
# model is built under.
FP32_FLAG_ATTR = "_arctic_fp32_lm_head"


def fp32_head_projection(
    hidden_states: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> torch.Tensor:
    """``hidden_states @ weight.T (+ bias)`` computed and returned in fp32.

    The weight is upcast ``rows`` vocabulary rows at a time, where one fp32
    slice of ``rows x hidden`` fits in ``chunk_bytes``; the full fp32 weight
    never exists, so peak memory grows by at most ``chunk_bytes`` plus the
    fp32 logits that the caller needs anyway.

    Products of bf16/fp16 numbers are exact in fp32 and the sum accumulates
    in fp32, so the result differs from an fp64 reference only by fp32
    accumulation error, not by the 2^-8 relative rounding of bf16 logits.
    """
    if hidden_states.shape[-1] != weight.shape[-1]:
        raise ValueError(
            f"LM head mismatch: hidden size {hidden_states.shape[-1]} vs weight "
            f"of shape {tuple(weight.shape)}; the weight must be [vocab, hidden]."
        )
    if chunk_bytes <= 0:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}.")
    hidden32 = hidden_states.to(torch.float32)
    bias32 = bias.to(torch.float32) if bias is not None else None
    vocab, hidden = weight.shape
    rows = max(1, chunk_bytes // (hidden * 4))
    if rows >= vocab:
        return F.linear(hidden32, weight.to(torch.float32), bias32)

    out = torch.empty(
        (*hidden_states.shape[:-1], vocab),
        dtype=torch.float32,
        device=hidden_states.device,
    )
    for start in range(0, vocab, rows):
        stop = min(start + rows, vocab)
        part_bias = bias32[start:stop] if bias32 is not None else None
        out[..., start:stop] = F.linear(hidden32, weight[start:stop].to(torch.float32), part_bias)
    return out


def uses_fp32_projection(lm_head: torch.nn.Module, hidden_states: torch.Tensor) -> bool:
    """Whether the fp32 path applies; otherwise vLLM's own projection runs.

    Quantized heads go to vLLM (no plain weight to upcast), and so do inputs
    that are already fp32 or wider (nothing to gain).
    """
    return (
        isinstance(getattr(lm_head, "quant_method", None), UnquantizedEmbeddingMethod)
        and hidden_states.dtype in _LOW_PRECISION
    )


class FP32LMHeadPatch(ArcticPatch[LogitsProcessor]):
    """Run the LM-head projection in fp32 for the logits and greedy paths."""

    _orig___init__ = LogitsProcessor.__init__
    _orig__apply_head = LogitsProcessor._apply_head

    def __init__(self: LogitsProcessor, *args: Any, **kwargs: Any) -> None:
        FP32LMHeadPatch._orig___init__(self, *args, **kwargs)
        setattr(self, FP32_FLAG_ATTR, fp32_lm_head_enabled(get_current_vllm_config_or_none()))

    def _apply_head(
        self: LogitsProcessor,
        lm_head: torch.nn.Module,
        hidden_states: torch.Tensor,
        embedding_bias: torch.Tensor | None,
    ) -> torch.Tensor:
        if not (
            self.__dict__.get(FP32_FLAG_ATTR, False)
            and uses_fp32_projection(lm_head, hidden_states)
        ):
            return FP32LMHeadPatch._orig__apply_head(self, lm_head, hidden_states, embedding_bias)
        return fp32_head_projection(hidden_states, lm_head.weight, embedding_bias)
