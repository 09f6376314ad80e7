"""Shift parallelism's per-step choices and bookkeeping (pure).

* :func:`select_mode` -- which layout an engine step runs in, from the number
  of tokens the scheduler gave it: big steps (prefill, large batches) in the SP
  layout, small decode steps in folded TP, where the two all-to-alls per layer
  cost more than the sequence split saves.
* :func:`folded_view` -- where a rank's folded-TP weight shard sits inside the
  TP shard it already holds for the SP layout. With the TP-major folded order
  of :mod:`.layout` it is always a slice, so both layouts are resident once:
  plain column-parallel weights give a contiguous row slice, row-parallel
  weights a column slice (a strided view a GEMM reads in place), and only
  merged projections (QKV, gate/up) need their pieces joined.
* :func:`batch_mode` -- the layout of a step once vLLM padded it: a function of
  the padded token count, which is also the CUDA-graph key, so capture and
  replay of one graph agree on the layout; :func:`graph_capture_sizes` makes
  the sizes captured in the SP layout split evenly over the SP ranks.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Sequence
from typing import Literal, Protocol

from arctic_inference.vllm.ulysses.heads import HeadSplit
from arctic_inference.vllm.ulysses.layout import ParallelLayout, RankCoords
from arctic_inference.vllm.ulysses.sp_args import ShiftSettings


class StepMode(enum.Enum):
    SP = "sp"  # sequence split x TP, two all-to-alls around attention
    FOLDED = "folded"  # plain TP over all SP x TP ranks


def select_mode(num_scheduled_tokens: int, settings: ShiftSettings) -> StepMode:
    """The layout of one engine step."""
    if num_scheduled_tokens < 0:
        raise ValueError(f"a step cannot schedule {num_scheduled_tokens} tokens.")
    if settings.enabled and num_scheduled_tokens < settings.threshold:
        return StepMode.FOLDED
    return StepMode.SP


# --- weight shards of both layouts ------------------------------------------------

ShardKind = Literal["column", "row"]


@dataclasses.dataclass(frozen=True)
class FoldedView:
    """The folded shard as slices of the rank's TP-layout shard along ``dim``.

    ``pieces`` are ``(start, stop)`` ranges, one per sub-projection of a merged
    weight (one for a plain weight); ``contiguous`` tells whether the slice is
    a contiguous block of memory for a row-major ``(out, in)`` weight.
    """

    dim: int
    pieces: tuple[tuple[int, int], ...]
    contiguous: bool

    @property
    def is_view(self) -> bool:
        """One piece: the folded shard is a view, no memory of its own."""
        return len(self.pieces) == 1


def _piece(size: int, layout: ParallelLayout, coords: RankCoords) -> tuple[int, int]:
    if size % layout.folded_tp:
        raise ValueError(
            f"a dimension of {size} does not split over SP x TP = {layout.folded_tp} ranks."
        )
    per = size // layout.folded_tp
    return coords.sp * per, (coords.sp + 1) * per


def folded_view(
    kind: ShardKind, sizes: Sequence[int], layout: ParallelLayout, coords: RankCoords
) -> FoldedView:
    """Where the folded shard of a weight sits in ``coords``' TP shard.

    ``sizes`` are the full (unsharded) sizes of the split dimension of each
    sub-projection: ``[out]`` for a plain column-parallel weight, ``[q, k, v]``
    for a merged QKV, ``[in]`` for a row-parallel one. For TP rank ``t`` the TP
    shard of a sub-projection is its ``t``-th ``1/TP`` chunk; folded rank
    ``t * SP + s`` owns the ``s``-th ``1/SP`` chunk of it.
    """
    pieces = []
    offset = 0
    for size in sizes:
        start, stop = _piece(size, layout, coords)
        pieces.append((offset + start, offset + stop))
        offset += size // layout.tp
    dim = 0 if kind == "column" else 1
    return FoldedView(dim=dim, pieces=tuple(pieces), contiguous=kind == "column")


def qkv_sizes(split: HeadSplit, head_size: int) -> tuple[int, int, int]:
    """Full output sizes of a merged QKV projection whose KV heads split over all ranks.

    Fewer KV heads than SP x TP are replicated instead; their folded shard is the
    whole replicated head (see :func:`.heads.kv_heads`), not a slice.
    """
    if split.num_kv_heads < split.ranks:
        raise ValueError(
            f"{split.num_kv_heads} KV heads are replicated over {split.ranks} ranks: "
            "their folded shard is the whole head, not a slice."
        )
    kv = split.num_kv_heads * head_size
    return split.num_heads * head_size, kv, kv


# --- CUDA graphs of both layouts ----------------------------------------------


class PaddedBatch(Protocol):
    """What the layout of a dispatched step depends on: vLLM's ``BatchDescriptor``."""

    @property
    def num_tokens(self) -> int: ...


def batch_mode(batch: PaddedBatch, settings: ShiftSettings) -> StepMode:
    """The layout of a step as vLLM's dispatcher padded it.

    The padded token count is the CUDA-graph key (``BatchDescriptor.num_tokens``),
    so deciding from it, at capture and at run time alike, gives each key one
    layout: a graph is always replayed in the layout it was captured in (its
    communicators, weight views and per-rank token counts). A step that runs
    eagerly is not padded, so this is then :func:`select_mode` of its tokens.
    """
    return select_mode(batch.num_tokens, settings)


def graph_capture_sizes(
    capture_sizes: Iterable[int], sp: int, settings: ShiftSettings, max_tokens: int
) -> list[int]:
    """vLLM's capture sizes with every SP-layout size made a multiple of ``sp``.

    An SP step runs ``padded / sp`` tokens per rank; a size that does not divide
    would pad twice (to the graph size, then to a multiple of SP inside the
    graph). Such a size is rounded up, or down where up passes ``max_tokens``
    (the scheduler's token budget); FOLDED sizes are kept as they are. The layout
    of each resulting size is :func:`batch_mode` of it, as at run time.
    """
    if sp < 1:
        raise ValueError(f"SP size must be >= 1, got {sp}.")
    sizes: set[int] = set()
    for size in capture_sizes:
        if size < 1:
            raise ValueError(f"CUDA-graph capture size {size} is not positive.")
        if select_mode(size, settings) is StepMode.SP and size % sp:
            up = -(-size // sp) * sp
            size = up if up <= max_tokens else size - size % sp
        if size >= 1:
            sizes.add(size)
    return sorted(sizes)
