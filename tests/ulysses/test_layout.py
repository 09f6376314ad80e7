"""Rank coordinates and groups for every DP x PP x SP x TP split of up to 8 ranks,
checked as partitions and against vLLM 0.26.0's own group builder."""

from __future__ import annotations

import itertools

import pytest

from arctic_inference.vllm.ulysses.layout import ParallelLayout, RankCoords, all_layouts

LAYOUTS = all_layouts(8)
IDS = [f"dp{x.dp}-pp{x.pp}-sp{x.sp}-tp{x.tp}" for x in LAYOUTS]


def test_every_split_of_up_to_8_ranks_is_enumerated() -> None:
    # Ordered factorisations of n into 4 factors: 1, 4, 4, 10, 4, 16, 4, 20 for n = 1..8.
    assert len(LAYOUTS) == 63
    assert len(set(LAYOUTS)) == 63
    assert ParallelLayout(dp=2, pp=1, sp=2, tp=2) in LAYOUTS
    assert all(x.world_size <= 8 for x in LAYOUTS)


def _assert_partition(groups: list[tuple[int, ...]], size: int, world: int) -> None:
    assert all(len(g) == size for g in groups)
    assert sorted(itertools.chain.from_iterable(groups)) == list(range(world))


@pytest.mark.parametrize("layout", LAYOUTS, ids=IDS)
def test_coordinates_round_trip_and_cover_the_grid(layout: ParallelLayout) -> None:
    seen = set()
    for rank in range(layout.world_size):
        coords = layout.coords(rank)
        assert layout.rank(coords) == rank
        seen.add((coords.dp, coords.pp, coords.sp, coords.tp))
    assert len(seen) == layout.world_size


@pytest.mark.parametrize("layout", LAYOUTS, ids=IDS)
def test_each_kind_of_group_partitions_the_world(layout: ParallelLayout) -> None:
    world = layout.world_size
    _assert_partition(layout.tp_groups(), layout.tp, world)
    _assert_partition(layout.sp_groups(), layout.sp, world)
    _assert_partition(layout.sp_tp_groups(), layout.sp * layout.tp, world)
    _assert_partition(layout.folded_tp_groups(), layout.sp * layout.tp, world)
    _assert_partition(layout.pp_groups(), layout.pp, world)
    _assert_partition(layout.dp_groups(), layout.dp, world)


@pytest.mark.parametrize("layout", LAYOUTS, ids=IDS)
def test_tp_ranks_are_adjacent_and_sp_tp_blocks_contiguous(layout: ParallelLayout) -> None:
    for group in layout.tp_groups():
        assert group == tuple(range(group[0], group[0] + layout.tp))
    for group in layout.sp_tp_groups():
        assert group == tuple(range(group[0], group[0] + layout.sp * layout.tp))
    for group in layout.sp_groups():
        assert all(b - a == layout.tp for a, b in itertools.pairwise(group))


@pytest.mark.parametrize("layout", LAYOUTS, ids=IDS)
def test_sp_tp_group_is_the_product_of_its_sp_and_tp_groups(layout: ParallelLayout) -> None:
    for rank in range(layout.world_size):
        mine = layout.groups_of(rank)
        block = set(mine["sp_tp"])
        sp_of = {r: layout.groups_of(r)["sp"] for r in block}
        tp_of = {r: layout.groups_of(r)["tp"] for r in block}
        assert set(itertools.chain.from_iterable(sp_of.values())) == block
        assert set(itertools.chain.from_iterable(tp_of.values())) == block
        # Every SP group meets every TP group of the block in exactly one rank.
        for sp_group, tp_group in itertools.product(set(sp_of.values()), set(tp_of.values())):
            assert len(set(sp_group) & set(tp_group)) == 1
        assert set(mine["folded_tp"]) == block
        # Members outside the block differ in DP or PP only.
        here = layout.coords(rank)
        for other in block:
            there = layout.coords(other)
            assert (there.dp, there.pp) == (here.dp, here.pp)


@pytest.mark.parametrize("layout", LAYOUTS, ids=IDS)
def test_folded_group_order_is_tp_major(layout: ParallelLayout) -> None:
    for group in layout.folded_tp_groups():
        for position, rank in enumerate(group):
            coords = layout.coords(rank)
            assert position == coords.tp * layout.sp + coords.sp
            assert layout.folded_rank(coords) == position


def test_one_example_spelled_out() -> None:
    # 8 ranks, DP 2 x SP 2 x TP 2: written out by hand.
    layout = ParallelLayout(dp=2, pp=1, sp=2, tp=2)
    assert layout.tp_groups() == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert layout.sp_groups() == [(0, 2), (1, 3), (4, 6), (5, 7)]
    assert layout.sp_tp_groups() == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert layout.folded_tp_groups() == [(0, 2, 1, 3), (4, 6, 5, 7)]
    assert layout.dp_groups() == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert layout.coords(6) == RankCoords(dp=1, pp=0, sp=1, tp=0)
    assert layout.engine_world_size == 4


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_sizes_must_be_positive_integers(bad: object) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        ParallelLayout(sp=bad)  # type: ignore[arg-type]


def test_out_of_range_rank_and_coordinate_are_refused() -> None:
    layout = ParallelLayout(sp=2, tp=2)
    with pytest.raises(ValueError, match="outside the world"):
        layout.coords(4)
    with pytest.raises(ValueError, match="sp coordinate 2"):
        layout.rank(RankCoords(dp=0, pp=0, sp=2, tp=0))


# --- agreement with vLLM's own group builder -------------------------------------


def _vllm_groups(monkeypatch: pytest.MonkeyPatch, layout: ParallelLayout) -> dict[str, list]:
    """Run vLLM 0.26.0's real ``initialize_model_parallel`` for this world, asked for
    TP = SP x TP as the SP patch asks it, and record the groups it builds."""
    import torch.distributed
    from vllm.config import DeviceConfig, ParallelConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import parallel_state

    built: dict[str, list] = {}

    class Built:
        rank_in_group = 0

    def record(group_ranks, local_rank, backend, **kwargs):
        built[kwargs["group_name"]] = [tuple(g) for g in group_ranks]
        return Built()

    for name in ("_TP", "_DCP", "_PCP", "_PP", "_DP", "_EP", "_EPLB"):
        monkeypatch.setattr(parallel_state, name, None)
    monkeypatch.setattr(parallel_state, "init_model_parallel_group", record)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda *a, **k: layout.world_size)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda *a, **k: 0)
    config = VllmConfig(
        device_config=DeviceConfig(device="cpu"),
        parallel_config=ParallelConfig(data_parallel_size=layout.dp),
    )
    with set_current_vllm_config(config):
        parallel_state.initialize_model_parallel(
            tensor_model_parallel_size=layout.sp * layout.tp,
            pipeline_model_parallel_size=layout.pp,
            backend="gloo",
        )
    return built


@pytest.mark.vllm
@pytest.mark.parametrize("layout", LAYOUTS, ids=IDS)
def test_vllm_builds_the_same_pp_dp_and_sp_tp_groups(
    layout: ParallelLayout, monkeypatch: pytest.MonkeyPatch, one_rank_group: None
) -> None:
    # Groups are compared in their rank order; the order of the list does not matter.
    built = {kind: sorted(groups) for kind, groups in _vllm_groups(monkeypatch, layout).items()}
    assert built["tp"] == sorted(layout.sp_tp_groups())
    assert built["pp"] == sorted(layout.pp_groups())
    assert built["dp"] == sorted(layout.dp_groups())
    if layout.sp == 1:
        assert built["tp"] == sorted(layout.tp_groups())
