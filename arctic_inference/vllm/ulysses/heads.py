"""Which attention heads each rank holds, and the rules that make a split valid (pure).

In the SP layout, TP first gives TP rank ``t`` a contiguous chunk of the heads
(as vLLM does), then the all-to-all over the SP group gives SP rank ``s`` the
``s``-th sub-chunk of it. KV heads follow vLLM's rule at each level: split
when there are at least as many heads as ranks, otherwise replicate each head
over ``ranks / heads`` consecutive ranks. In the folded TP layout, vLLM's plain
TP over ``SP * TP`` ranks does the same in one level. :func:`query_heads` and
:func:`kv_heads` compute both, so a test can check they agree for every rank
(which is what lets both layouts share one KV cache).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from arctic_inference.vllm.ulysses.layout import ParallelLayout, RankCoords

Mode = Literal["sp", "folded"]


class HeadSplitError(ValueError):
    """The model's head counts cannot be split over the requested ranks."""


@dataclasses.dataclass(frozen=True)
class HeadSplit:
    """Per-rank head counts of a model split over SP x TP ranks."""

    num_heads: int
    num_kv_heads: int
    sp: int
    tp: int

    @property
    def ranks(self) -> int:
        return self.sp * self.tp

    @property
    def heads_per_rank(self) -> int:
        return self.num_heads // self.ranks

    @property
    def heads_per_tp_rank(self) -> int:
        """Query heads a TP rank holds before the all-to-all (vLLM's own count)."""
        return self.num_heads // self.tp

    @property
    def kv_heads_per_rank(self) -> int:
        return max(1, self.num_kv_heads // self.ranks)

    @property
    def kv_heads_per_tp_rank(self) -> int:
        """KV heads a TP rank holds before the all-to-all (vLLM's own count)."""
        return max(1, self.num_kv_heads // self.tp)

    @property
    def kv_sp_replicas(self) -> int:
        """How many SP ranks receive the same KV head in the all-to-all (1: none)."""
        return max(1, self.sp // self.kv_heads_per_tp_rank)


def _divides_or_replicates(heads: int, ranks: int) -> bool:
    return heads % ranks == 0 or ranks % heads == 0


def check_head_split(num_heads: int, num_kv_heads: int, sp: int, tp: int) -> HeadSplit:
    """The split, or :class:`HeadSplitError` naming the numbers and the fix."""
    ranks = sp * tp
    size = f"ulysses_sequence_parallel_size={sp} x tensor_parallel_size={tp} = {ranks}"
    if num_heads % ranks:
        raise HeadSplitError(
            f"the model has {num_heads} attention heads, which do not divide by {size}; "
            f"choose SP x TP among the divisors of {num_heads}."
        )
    if not _divides_or_replicates(num_kv_heads, tp):
        raise HeadSplitError(
            f"the model has {num_kv_heads} KV heads and tensor_parallel_size={tp}: one must "
            "divide the other (vLLM splits or replicates KV heads over TP ranks)."
        )
    if not _divides_or_replicates(num_kv_heads, ranks):
        raise HeadSplitError(
            f"the model has {num_kv_heads} KV heads, which neither divide by {size} nor "
            f"divide it (needed to split or replicate them over the ranks); choose SP x TP "
            f"a multiple or a divisor of {num_kv_heads}."
        )
    return HeadSplit(num_heads=num_heads, num_kv_heads=num_kv_heads, sp=sp, tp=tp)


def _chunk(total: int, ranks: int, index: int) -> tuple[int, ...]:
    """vLLM's split of ``total`` heads over ``ranks``: a chunk, or a replicated head."""
    if total >= ranks:
        per = total // ranks
        return tuple(range(index * per, (index + 1) * per))
    return (index // (ranks // total),)


def plain_tp_heads(total: int, ranks: int, index: int) -> tuple[int, ...]:
    """Heads rank ``index`` of a plain TP group of ``ranks`` holds (vLLM's rule)."""
    return _chunk(total, ranks, index)


def _two_level(total: int, split: HeadSplit, coords: RankCoords) -> tuple[int, ...]:
    """SP layout: the TP rank's chunk, then the SP rank's share of that chunk."""
    held = _chunk(total, split.tp, coords.tp)
    return tuple(held[i] for i in _chunk(len(held), split.sp, coords.sp))


def query_heads(
    split: HeadSplit, layout: ParallelLayout, coords: RankCoords, mode: Mode
) -> tuple[int, ...]:
    """Global indices of the query heads ``coords`` attends over in ``mode``."""
    if mode == "folded":
        return _chunk(split.num_heads, split.ranks, layout.folded_rank(coords))
    return _two_level(split.num_heads, split, coords)


def kv_heads(
    split: HeadSplit, layout: ParallelLayout, coords: RankCoords, mode: Mode
) -> tuple[int, ...]:
    """Global indices of the KV heads ``coords`` caches in ``mode``."""
    if mode == "folded":
        return _chunk(split.num_kv_heads, split.ranks, layout.folded_rank(coords))
    return _two_level(split.num_kv_heads, split, coords)
