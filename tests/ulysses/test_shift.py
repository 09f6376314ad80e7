"""Shift parallelism: the per-step mode, the folded weight views and the graph keys."""

from __future__ import annotations

import pytest
import torch

from arctic_inference.vllm.ulysses.heads import check_head_split
from arctic_inference.vllm.ulysses.layout import ParallelLayout, all_layouts
from arctic_inference.vllm.ulysses.shift import (
    GraphKey,
    GraphKeyRegistry,
    StepMode,
    folded_view,
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


# --- graph keys ---------------------------------------------------------------

SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def test_shift_splits_the_capture_sizes_by_threshold_and_pads_sp_sizes() -> None:
    registry = GraphKeyRegistry([1, 3, 8, 600, 1023], sp=2, settings=ShiftSettings(True, 512))
    assert registry.keys() == [
        GraphKey(StepMode.FOLDED, 1),
        GraphKey(StepMode.FOLDED, 3),
        GraphKey(StepMode.FOLDED, 8),
        GraphKey(StepMode.SP, 600),
        GraphKey(StepMode.SP, 1024),  # 1023 padded to a multiple of SP
    ]


def test_without_shift_every_graph_is_sp() -> None:
    registry = GraphKeyRegistry(SIZES, sp=2, settings=OFF)
    assert {key.mode for key in registry.keys()} == {StepMode.SP}
    assert registry.lookup(3) == (StepMode.SP, GraphKey(StepMode.SP, 4))
    with pytest.raises(ValueError, match="only with shift"):
        registry.register(StepMode.FOLDED, 4)


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (1, (StepMode.FOLDED, GraphKey(StepMode.FOLDED, 1))),
        (3, (StepMode.FOLDED, GraphKey(StepMode.FOLDED, 4))),
        (300, (StepMode.FOLDED, None)),  # above the largest FOLDED size: never an SP graph
        (512, (StepMode.SP, GraphKey(StepMode.SP, 512))),
        (513, (StepMode.SP, GraphKey(StepMode.SP, 1024))),
        (2000, (StepMode.SP, None)),
    ],
)
def test_lookup_stays_within_the_steps_mode(tokens, expected) -> None:
    registry = GraphKeyRegistry([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], sp=2, settings=ON)
    assert registry.lookup(tokens) == expected


def test_keys_of_two_modes_never_compare_equal() -> None:
    assert GraphKey(StepMode.SP, 8) != GraphKey(StepMode.FOLDED, 8)
    assert len({GraphKey(StepMode.SP, 8), GraphKey(StepMode.FOLDED, 8)}) == 2


def test_registering_twice_keeps_one_key() -> None:
    registry = GraphKeyRegistry([], sp=4, settings=ON)
    assert registry.register(StepMode.SP, 513) == GraphKey(StepMode.SP, 516)
    registry.register(StepMode.SP, 516)
    assert registry.keys() == [GraphKey(StepMode.SP, 516)]
