"""Head split rules and the per-rank heads of both layouts."""

from __future__ import annotations

import itertools

import pytest

from arctic_inference.vllm.ulysses.heads import (
    HeadSplitError,
    check_head_split,
    kv_heads,
    query_heads,
)
from arctic_inference.vllm.ulysses.layout import ParallelLayout, RankCoords, all_layouts

HEAD_COUNTS = [(8, 8), (8, 2), (8, 1), (16, 4), (32, 8), (4, 2), (12, 4)]


def _valid(heads: int, kv: int, sp: int, tp: int) -> bool:
    # The rule written independently of the code: vLLM's TP rule, then the same
    # rule over all SP x TP ranks.
    ranks = sp * tp
    tp_ok = kv % tp == 0 or tp % kv == 0
    return heads % ranks == 0 and tp_ok and (kv % ranks == 0 or ranks % kv == 0)


ALL = [
    (layout, heads, kv)
    for layout in all_layouts(8)
    if layout.dp == layout.pp == 1
    for heads, kv in HEAD_COUNTS
]
VALID = [c for c in ALL if _valid(c[1], c[2], c[0].sp, c[0].tp)]
INVALID = [c for c in ALL if not _valid(c[1], c[2], c[0].sp, c[0].tp)]


def test_both_kinds_of_case_are_exercised() -> None:
    assert len(VALID) > 50 and len(INVALID) > 10


@pytest.mark.parametrize(("layout", "heads", "kv"), INVALID)
def test_splits_outside_the_rule_are_refused(layout: ParallelLayout, heads: int, kv: int) -> None:
    with pytest.raises(HeadSplitError, match="heads"):
        check_head_split(heads, kv, layout.sp, layout.tp)


@pytest.mark.parametrize(("layout", "heads", "kv"), VALID)
def test_sp_layout_and_folded_tp_give_each_rank_the_same_heads(
    layout: ParallelLayout, heads: int, kv: int
) -> None:
    split = check_head_split(heads, kv, layout.sp, layout.tp)
    all_q: list[int] = []
    all_kv: set[int] = set()
    for rank in range(layout.world_size):
        coords = layout.coords(rank)
        q_sp = query_heads(split, layout, coords, "sp")
        assert q_sp == query_heads(split, layout, coords, "folded")
        kv_sp = kv_heads(split, layout, coords, "sp")
        assert kv_sp == kv_heads(split, layout, coords, "folded")
        assert len(q_sp) == split.heads_per_rank == heads // (layout.sp * layout.tp)
        assert len(kv_sp) == split.kv_heads_per_rank
        all_q.extend(q_sp)
        all_kv.update(kv_sp)
    assert sorted(all_q) == list(range(heads))  # every query head on exactly one rank
    assert all_kv == set(range(kv))  # every KV head somewhere


def test_replicated_kv_heads_by_hand() -> None:
    # 8 query heads, 2 KV heads, SP 2 x TP 2: TP rank t holds KV head t, and both SP
    # ranks of it receive that head; query heads go out in blocks of 2.
    layout = ParallelLayout(sp=2, tp=2)
    split = check_head_split(8, 2, sp=2, tp=2)
    assert (split.kv_heads_per_tp_rank, split.kv_sp_replicas) == (1, 2)
    table = {
        (s, t): (
            query_heads(split, layout, RankCoords(0, 0, s, t), "sp"),
            kv_heads(split, layout, RankCoords(0, 0, s, t), "sp"),
        )
        for s, t in itertools.product(range(2), range(2))
    }
    assert table == {
        (0, 0): ((0, 1), (0,)),
        (1, 0): ((2, 3), (0,)),
        (0, 1): ((4, 5), (1,)),
        (1, 1): ((6, 7), (1,)),
    }


def test_world_ordered_folding_would_not_share_the_kv_cache() -> None:
    # Why the folded group is TP-major: rank (sp=1, tp=0) holds heads 2-3 in the SP
    # layout; in a folded group ordered like the world (sp * TP + tp) it would be
    # folded rank 2 and hold heads 4-5, so the two layouts could not share a KV cache.
    layout = ParallelLayout(sp=2, tp=2)
    split = check_head_split(8, 8, sp=2, tp=2)
    coords = RankCoords(0, 0, sp=1, tp=0)
    world_order_chunk = coords.sp * layout.tp + coords.tp
    assert query_heads(split, layout, coords, "sp") == (2, 3)
    assert tuple(range(world_order_chunk * 2, world_order_chunk * 2 + 2)) == (4, 5)


@pytest.mark.parametrize(
    ("heads", "kv", "sp", "tp", "words"),
    [
        (6, 6, 2, 2, "6 attention heads, which do not divide by"),
        (8, 3, 2, 1, "3 KV heads, which neither divide by"),
        (12, 4, 1, 3, "4 KV heads and tensor_parallel_size=3"),
        (24, 4, 2, 3, "4 KV heads and tensor_parallel_size=3"),
        (16, 6, 4, 2, "6 KV heads"),
    ],
)
def test_refusals_name_the_numbers(heads: int, kv: int, sp: int, tp: int, words: str) -> None:
    with pytest.raises(HeadSplitError) as info:
        check_head_split(heads, kv, sp, tp)
    message = str(info.value)
    assert words in message
    assert f"ulysses_sequence_parallel_size={sp}" in message or f"={tp}" in message
