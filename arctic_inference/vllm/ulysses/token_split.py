"""Which of a step's tokens an SP rank runs outside attention (pure).

The step's ``T`` tokens (vLLM's padded input length) are padded to a multiple
of SP and rank ``s`` takes the ``s``-th block, the order the all-to-all
assumes. Pad tokens sit past the step's real tokens, where vLLM's attention
metadata already ends (it reads ``num_actual_tokens``); the gathered output is
cut back to ``T``.
"""

from __future__ import annotations

import dataclasses

import torch


@dataclasses.dataclass(frozen=True)
class TokenSplit:
    num_tokens: int
    sp: int
    rank: int

    def __post_init__(self) -> None:
        if not 0 <= self.rank < self.sp:
            raise ValueError(f"SP rank {self.rank} is outside 0..{self.sp - 1}.")

    @property
    def padded(self) -> int:
        return -(-self.num_tokens // self.sp) * self.sp

    @property
    def local(self) -> int:
        return self.padded // self.sp

    @property
    def block(self) -> slice:
        return slice(self.rank * self.local, (self.rank + 1) * self.local)

    def take(self, x: torch.Tensor | None, dim: int = 0) -> torch.Tensor | None:
        """This rank's block of ``x`` along ``dim`` (the token dimension), padded with zeros."""
        if x is None:
            return None
        if x.shape[dim] != self.num_tokens:
            raise ValueError(f"expected {self.num_tokens} tokens on dim {dim}, got {x.shape[dim]}.")
        missing = self.padded - self.num_tokens
        if missing:
            pad_shape = list(x.shape)
            pad_shape[dim] = missing
            x = torch.cat([x, x.new_zeros(pad_shape)], dim=dim)
        return x.narrow(dim, self.block.start, self.local)

    def trim(self, gathered: torch.Tensor) -> torch.Tensor:
        """The gathered ``(padded, ...)`` output cut back to the step's tokens."""
        if gathered.shape[0] != self.padded:
            raise ValueError(f"expected {self.padded} gathered tokens, got {gathered.shape[0]}.")
        return gathered[: self.num_tokens]
