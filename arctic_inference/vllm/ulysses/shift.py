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
* :class:`GraphKeyRegistry` -- CUDA graphs keyed by ``(mode, padded tokens)``,
  so a step never replays a graph captured for the other layout (different
  communicators, weight views and per-rank token counts).
"""

from __future__ import annotations

import bisect
import dataclasses
import enum
from collections.abc import Iterable, Sequence
from typing import Literal

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


# --- CUDA-graph keys for both modes -------------------------------------------


@dataclasses.dataclass(frozen=True)
class GraphKey:
    """One captured graph: equal only for the same mode and padded size."""

    mode: StepMode
    padded_tokens: int

    @property
    def name(self) -> str:
        return f"{self.mode.value}:{self.padded_tokens}"


class GraphKeyRegistry:
    """Which CUDA graphs exist, per mode, and which one a step replays.

    Built once from vLLM's capture sizes. Without shift every size is an SP
    graph. With shift, sizes below the threshold are FOLDED graphs and the rest
    SP graphs; SP sizes are rounded up to a multiple of SP because each rank
    runs ``padded / SP`` tokens. A step looks up only its own mode's keys and
    gets the smallest that fits, or ``None`` (run eagerly).
    """

    def __init__(self, capture_sizes: Iterable[int], sp: int, settings: ShiftSettings) -> None:
        if sp < 1:
            raise ValueError(f"SP size must be >= 1, got {sp}.")
        self.sp = sp
        self.settings = settings
        self._sizes: dict[StepMode, list[int]] = {StepMode.SP: [], StepMode.FOLDED: []}
        for size in capture_sizes:
            if size < 1:
                raise ValueError(f"CUDA-graph capture size {size} is not positive.")
            mode = select_mode(size, settings)
            self.register(mode, size)

    def padded(self, mode: StepMode, num_tokens: int) -> int:
        if mode is StepMode.SP:
            return -(-num_tokens // self.sp) * self.sp
        return num_tokens

    def register(self, mode: StepMode, num_tokens: int) -> GraphKey:
        """Add a key (idempotent per padded size)."""
        if mode is StepMode.FOLDED and not self.settings.enabled:
            raise ValueError("FOLDED graphs exist only with shift parallelism enabled.")
        size = self.padded(mode, num_tokens)
        sizes = self._sizes[mode]
        index = bisect.bisect_left(sizes, size)
        if index == len(sizes) or sizes[index] != size:
            sizes.insert(index, size)
        return GraphKey(mode, size)

    def keys(self) -> list[GraphKey]:
        """Every key to capture, FOLDED first, each mode in ascending size."""
        return [
            GraphKey(mode, size)
            for mode in (StepMode.FOLDED, StepMode.SP)
            for size in self._sizes[mode]
        ]

    def lookup(self, num_scheduled_tokens: int) -> tuple[StepMode, GraphKey | None]:
        """The step's mode and the graph it replays (``None``: larger than any capture)."""
        mode = select_mode(num_scheduled_tokens, self.settings)
        sizes = self._sizes[mode]
        index = bisect.bisect_left(sizes, self.padded(mode, num_scheduled_tokens))
        if index == len(sizes):
            return mode, None
        return mode, GraphKey(mode, sizes[index])
