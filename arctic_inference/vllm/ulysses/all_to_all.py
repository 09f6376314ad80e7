"""The two all-to-alls around attention: sequence split -> head split -> sequence split.

Outside attention, SP rank ``j`` of a group holds tokens ``[j * T/SP, (j+1) * T/SP)``
of the step with all of its TP rank's heads. Attention needs every token of a
head, so before it one all-to-all sends head chunk ``i`` of the local tokens to
SP rank ``i``; each rank then holds all ``T`` tokens (in order, since rank ``j``
sent the ``j``-th block) for ``heads / SP`` heads. After attention the inverse
exchange returns each rank's tokens with all heads.

KV heads fewer than SP are repeated before the exchange, so SP rank ``s``
receives KV head ``s // (SP / kv_heads)``, the head its query heads attend to
(the replication rule of :mod:`.heads`).

Both exchanges are a single ``torch.distributed.all_to_all_single`` on the
given process group; the gloo backend implements it too, so the CPU tests run
this very code on two processes, with no fallback path.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist

__all__ = ["UlyssesExchange", "heads_to_sequence", "sequence_to_heads"]


def _exchange(chunks: torch.Tensor, group: dist.ProcessGroup | None) -> torch.Tensor:
    """all-to-all over dim 0 of a ``(SP, ...)`` tensor: chunk ``i`` goes to rank ``i``."""
    chunks = chunks.contiguous()
    # After .contiguous(): empty_like keeps a transposed input's strides, and the
    # collective fills its output as flat memory.
    out = torch.empty_like(chunks)
    dist.all_to_all_single(out, chunks, group=group)
    return out


def sequence_to_heads(
    x: torch.Tensor, sp: int, group: dist.ProcessGroup | None = None
) -> torch.Tensor:
    """``(T/SP, H, D)`` local tokens, all heads -> ``(T, H/SP, D)`` all tokens, own heads."""
    tokens, heads, dim = x.shape
    if heads % sp:
        raise ValueError(f"{heads} heads do not split over {sp} sequence-parallel ranks.")
    if sp == 1:
        return x
    chunks = x.reshape(tokens, sp, heads // sp, dim).transpose(0, 1)
    return _exchange(chunks, group).reshape(sp * tokens, heads // sp, dim)


def heads_to_sequence(
    y: torch.Tensor, sp: int, group: dist.ProcessGroup | None = None
) -> torch.Tensor:
    """``(T, H/SP, D)`` all tokens, own heads -> ``(T/SP, H, D)`` local tokens, all heads."""
    tokens, heads, dim = y.shape
    if tokens % sp:
        raise ValueError(
            f"{tokens} tokens do not split over {sp} sequence-parallel ranks; pad the step "
            f"to a multiple of {sp}."
        )
    if sp == 1:
        return y
    received = _exchange(y.reshape(sp, tokens // sp, heads, dim), group)
    return received.transpose(0, 1).reshape(tokens // sp, sp * heads, dim)


AttentionFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


class UlyssesExchange:
    """Wraps an attention call with the two exchanges for one SP group.

    ``q``, ``k``, ``v`` arrive as ``(T/SP, heads * head_size)`` (vLLM's layout);
    ``attention`` is called with ``(T, heads/SP, head_size)`` tensors and must
    return the output in that shape; the result goes back as ``(T/SP, heads * head_size)``.
    """

    def __init__(
        self,
        sp: int,
        num_heads: int,
        num_kv_heads: int,
        head_size: int,
        group: dist.ProcessGroup | None,
    ) -> None:
        if num_heads % sp:
            raise ValueError(f"{num_heads} query heads do not split over SP={sp}.")
        if num_kv_heads % sp and sp % num_kv_heads:
            raise ValueError(f"{num_kv_heads} KV heads neither split nor replicate over SP={sp}.")
        self.sp = sp
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_size = head_size
        self.group = group
        self.kv_repeat = max(1, sp // num_kv_heads)

    def _kv(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(x.shape[0], self.num_kv_heads, self.head_size)
        if self.kv_repeat > 1:
            x = x.repeat_interleave(self.kv_repeat, dim=1)
        return sequence_to_heads(x, self.sp, self.group)

    def __call__(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attention: AttentionFn
    ) -> torch.Tensor:
        local_tokens = q.shape[0]
        q_heads = sequence_to_heads(
            q.reshape(local_tokens, self.num_heads, self.head_size), self.sp, self.group
        )
        out = attention(q_heads, self._kv(k), self._kv(v))
        return heads_to_sequence(out, self.sp, self.group).reshape(local_tokens, -1)
