"""Shift parallelism: the per-step mode, the folded weight views and the graph sizes."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from arctic_inference.vllm.ulysses.heads import check_head_split
from arctic_inference.vllm.ulysses.layout import ParallelLayout, all_layouts
from arctic_inference.vllm.ulysses.shift import (
    StepMode,
    batch_mode,
    folded_view,
    graph_capture_sizes,
    qkv_sizes,
    select_mode,
)
from arctic_inference.vllm.ulysses.sp_args import SHIFT_PARALLEL_THRESHOLD, ShiftSettings

ON = ShiftSettings(enabled=True, threshold=512)
OFF = ShiftSettings(enabled=False, threshold=512)


def test_default_threshold_is_512() -> None:
    assert SHIFT_PARALLEL_THRESHOLD.default == 512


@pytest.mark.parametrize(
    ("tokens", "settings", "mode"),
    [
        (1, ON, StepMode.FOLDED),
        (64, ON, StepMode.FOLDED),
        (511, ON, StepMode.FOLDED),
        (512, ON, StepMode.SP),
        (16384, ON, StepMode.SP),
        (0, ON, StepMode.FOLDED),
        (1, OFF, StepMode.SP),
        (16384, OFF, StepMode.SP),
    ],
)
def test_mode_follows_the_scheduled_tokens(tokens: int, settings: ShiftSettings, mode) -> None:
    assert select_mode(tokens, settings) is mode


def test_negative_tokens_are_a_bug() -> None:
    with pytest.raises(ValueError, match="-1 tokens"):
        select_mode(-1, ON)


# --- folded views, checked against sharding the full weight directly ----------


def _tp_shard(full: torch.Tensor, sizes: list[int], dim: int, ranks: int, index: int):
    """vLLM's layout of a (merged) TP shard: each sub-projection chunked, then joined."""
    parts = torch.split(full, sizes, dim=dim)
    return torch.cat([p.chunk(ranks, dim=dim)[index] for p in parts], dim=dim)


# Every SP x TP split whose ranks divide the sizes below (1, 2, 4 or 8 ranks).
LAYOUTS = [x for x in all_layouts(8) if x.dp == x.pp == 1 and 8 % x.folded_tp == 0]
SHAPES = [("column", [16]), ("column", [16, 8, 8]), ("row", [16]), ("column", [32, 16])]


@pytest.mark.parametrize("layout", LAYOUTS, ids=[f"sp{x.sp}-tp{x.tp}" for x in LAYOUTS])
@pytest.mark.parametrize(("kind", "sizes"), SHAPES)
def test_folded_shard_is_a_slice_of_the_tp_shard(layout, kind, sizes) -> None:
    dim = 0 if kind == "column" else 1
    total = sum(sizes)
    full = torch.arange(total * 3).reshape((total, 3) if dim == 0 else (3, total))
    for rank in range(layout.world_size):
        coords = layout.coords(rank)
        tp_shard = _tp_shard(full, sizes, dim, layout.tp, coords.tp)
        expected = _tp_shard(full, sizes, dim, layout.folded_tp, layout.folded_rank(coords))
        view = folded_view(kind, sizes, layout, coords)
        got = torch.cat([tp_shard.narrow(dim, a, b - a) for a, b in view.pieces], dim=dim)
        assert torch.equal(got, expected)
        assert view.is_view == (len(sizes) == 1)
        assert view.contiguous == (kind == "column")


def test_qkv_sizes_and_replicated_kv_heads() -> None:
    assert qkv_sizes(check_head_split(8, 4, sp=2, tp=2), head_size=4) == (32, 16, 16)
    with pytest.raises(ValueError, match="replicated over 4 ranks"):
        qkv_sizes(check_head_split(8, 2, sp=2, tp=2), head_size=4)


def test_undividable_dimension_is_refused() -> None:
    with pytest.raises(ValueError, match="does not split over SP x TP = 4"):
        folded_view("column", [6], ParallelLayout(sp=2, tp=2), ParallelLayout(sp=2, tp=2).coords(0))


# --- CUDA graphs of both layouts ---------------------------------------------


@dataclasses.dataclass(frozen=True)
class Padded:
    num_tokens: int


@pytest.mark.parametrize(
    ("padded", "mode"),
    [(1, StepMode.FOLDED), (511, StepMode.FOLDED), (512, StepMode.SP), (513, StepMode.SP)],
)
def test_the_layout_of_a_batch_is_that_of_its_padded_size(padded: int, mode: StepMode) -> None:
    assert batch_mode(Padded(padded), ON) is mode
    assert batch_mode(Padded(padded), OFF) is StepMode.SP


# vLLM 0.26.0's default capture sizes for max_num_seqs 256: 1, 2, 4, 8..248 by 8,
# 256..512 by 16.
DEFAULT_SIZES = [1, 2, 4, *range(8, 256, 8), *range(256, 513, 16)]


@pytest.mark.parametrize("sp", [2, 3, 4, 8])
@pytest.mark.parametrize("threshold", [1, 64, 500, 512])
def test_every_size_captured_in_the_sp_layout_splits_over_sp(sp: int, threshold: int) -> None:
    settings = ShiftSettings(enabled=True, threshold=threshold)
    sizes = graph_capture_sizes(DEFAULT_SIZES, sp, settings, max_tokens=8192)
    sp_sizes = [s for s in sizes if s >= threshold]
    assert len(sp_sizes) >= 1
    assert [s for s in sp_sizes if s % sp] == []
    folded = [s for s in sizes if s < threshold]
    assert folded == [s for s in DEFAULT_SIZES if s < threshold]  # FOLDED sizes untouched
    assert sizes == sorted(set(sizes))
    # no SP size lost: each original one pads to a fitted size less than SP above it
    originals = [s for s in DEFAULT_SIZES if s >= threshold]
    gaps = [min(s for s in sp_sizes if s >= size) - size for size in originals]
    assert len(gaps) == len(originals) >= 1
    assert max(gaps) < sp


def test_below_the_threshold_every_size_is_kept() -> None:
    settings = ShiftSettings(enabled=True, threshold=10_000)
    assert graph_capture_sizes(DEFAULT_SIZES, 3, settings, max_tokens=8192) == DEFAULT_SIZES


def test_sp_sizes_round_up_and_down_at_the_token_budget() -> None:
    settings = ShiftSettings(enabled=True, threshold=512)
    assert graph_capture_sizes([1, 3, 8, 601, 1023], 2, settings, max_tokens=1023) == [
        1,
        3,
        8,
        602,  # up
        1022,  # up would pass the budget of 1023
    ]


def test_without_shift_every_size_is_an_sp_size() -> None:
    assert graph_capture_sizes([1, 2, 3, 4, 8], 2, OFF, max_tokens=8192) == [2, 4, 8]
    assert graph_capture_sizes([1, 2, 4], 4, OFF, max_tokens=8192) == [4]
    assert graph_capture_sizes([1], 2, OFF, max_tokens=1) == []  # no multiple of 2 fits


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="capture size 0 is not positive"):
        graph_capture_sizes([0, 8], 2, ON, max_tokens=8192)
    with pytest.raises(ValueError, match="SP size must be >= 1"):
        graph_capture_sizes([8], 0, ON, max_tokens=8192)
