"""The vectorised grouping and plan build equal the loop-based first versions exactly.

Batches are drawn as block tries: each row copies a leading part of an earlier row and
continues with ids from a small alphabet, so ids repeat past divergence points and rows
nest, end early (computed tokens below the row) or match whole. The oracle is
``planner_oracle``, the transcription of the grouping's definition.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from planner_oracle import oracle_build_forest_plan, oracle_find_prefix_groups

from arctic_inference.vllm.attention.forest_config import ForestConfig
from arctic_inference.vllm.attention.grouping import _first_blocks_may_pay, find_prefix_groups
from arctic_inference.vllm.attention.plan import build_forest_plan

SETTINGS = settings(max_examples=400, deadline=None)
PLAN_SETTINGS = settings(max_examples=150, deadline=None)
INT32_MIN = int(np.iinfo(np.int32).min)


@st.composite
def tries(draw, max_reqs: int = 20, max_width: int = 10) -> list[list[int]]:
    """Rows of one width; each shares a drawn prefix with a drawn earlier row."""
    num_rows = draw(st.integers(1, max_reqs))
    width = draw(st.integers(1, max_width))
    alphabet = st.integers(0, draw(st.integers(0, 5)))
    rows: list[list[int]] = []
    for _ in range(num_rows):
        keep = draw(st.integers(0, width)) if rows else 0
        parent = rows[draw(st.integers(0, len(rows) - 1))] if rows else []
        tail = draw(st.lists(alphabet, min_size=width - keep, max_size=width - keep))
        rows.append(parent[:keep] + tail)
    return rows


configs = st.builds(
    ForestConfig,
    min_group_size=st.integers(2, 4),
    min_additional_prefix_blocks=st.integers(1, 3),
    min_non_singleton_fraction=st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]),
    max_non_singleton_groups=st.sampled_from([1, 2, 3, 256]),
)


@st.composite
def batches(draw):
    rows = draw(tries())
    block_size = draw(st.integers(1, 4))
    width = len(rows[0])
    num_reqs = draw(st.integers(1, len(rows)))  # rows past num_reqs are not requests
    computed = draw(
        st.lists(st.integers(0, (width + 1) * block_size), min_size=num_reqs, max_size=num_reqs)
    )
    table = np.asarray(rows, dtype=draw(st.sampled_from([np.int32, np.int64])))
    if draw(st.booleans()):
        table = table * 7919 - 3  # large and negative ids
    if draw(st.booleans()):
        table[table == table.min()] = INT32_MIN  # the dtype's minimum, for int32
    if draw(st.booleans()):  # a column slice of a wider table, like the host table
        wide = np.full((table.shape[0], width + 3), 99, dtype=table.dtype)
        wide[:, :width] = table
        table = wide[:, :width]
    return table, np.asarray(computed, dtype=np.int64), block_size


def _as_tuples(grouping):
    return None if grouping is None else [(g.requests, g.prefix_blocks) for g in grouping.groups]


@SETTINGS
@given(batch=batches(), config=configs)
def test_grouping_equals_the_oracle(batch, config):
    table, computed, block_size = batch
    want = oracle_find_prefix_groups(table, computed, block_size, config)
    got = find_prefix_groups(table, computed, block_size, config)
    assert got == want
    assert _as_tuples(got) == _as_tuples(want)  # same order, plain ints
    if got is not None:
        assert all(type(r) is int for g in got.groups for r in g.requests)
        assert all(type(g.prefix_blocks) is int for g in got.groups)


@settings(max_examples=60, deadline=None)
@given(rows=tries(max_reqs=80, max_width=40), config=configs, data=st.data())
def test_grouping_of_larger_tries_equals_the_oracle(rows, config, data):
    table = np.asarray(rows, dtype=np.int32)
    block_size = 4
    computed = np.asarray(
        data.draw(
            st.lists(
                st.integers(0, (table.shape[1] + 1) * block_size),
                min_size=len(rows),
                max_size=len(rows),
            )
        )
    )
    want = oracle_find_prefix_groups(table, computed, block_size, config)
    assert find_prefix_groups(table, computed, block_size, config) == want


def test_the_oracle_comparison_sees_groups():
    """The drawn batches are not all ungrouped (the property above would be vacuous)."""
    table = np.asarray([[1, 2, 3, 9], [1, 2, 3, 8], [1, 2, 5, 7], [4, 4, 4, 4], [4, 4, 6, 6]])
    computed = np.asarray([64, 64, 64, 64, 64])
    want = oracle_find_prefix_groups(table, computed, 16, ForestConfig())
    assert _as_tuples(want) == [((0, 1, 2), 2), ((3, 4), 2)]
    assert _as_tuples(find_prefix_groups(table, computed, 16, ForestConfig())) == [
        ((0, 1, 2), 2),
        ((3, 4), 2),
    ]


def _plans(grouping, table, computed, query_lens, block_size):
    qsl = np.zeros(len(query_lens) + 1, dtype=np.int64)
    qsl[1:] = np.cumsum(query_lens)
    seq_lens = torch.from_numpy(computed + np.asarray(query_lens)).int()
    kwargs = dict(
        query_start_loc_cpu=qsl,
        block_table_cpu=table,
        block_table=torch.from_numpy(np.ascontiguousarray(table)),
        seq_lens=seq_lens,
        max_seq_len=int(seq_lens.max()),
        block_size=block_size,
    )
    return build_forest_plan(grouping, **kwargs), oracle_build_forest_plan(grouping, **kwargs)


def _differences(got, want) -> list[str]:
    out = []
    for field in dataclasses.fields(want):
        a, b = getattr(got, field.name), getattr(want, field.name)
        if isinstance(b, torch.Tensor):
            same = a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
        else:
            same = type(a) is type(b) and a == b
        if not same:
            out.append(field.name)
    return out


@PLAN_SETTINGS
@given(batch=batches(), config=configs, data=st.data())
def test_plan_equals_the_oracle(batch, config, data):
    table, computed, block_size = batch
    config = dataclasses.replace(config, min_non_singleton_fraction=0.0)
    grouping = oracle_find_prefix_groups(table, computed, block_size, config)
    if grouping is None:  # no two requests share a block: a fixed batch that groups
        config = ForestConfig(min_non_singleton_fraction=0.0)
        table = np.asarray([[5, 6, 7], [5, 6, 8], [1, 2, 3]], dtype=np.int32)
        computed = np.asarray([3, 3, 3]) * block_size
        grouping = oracle_find_prefix_groups(table, computed, block_size, config)
    query_lens = data.draw(
        st.lists(st.integers(0, 3), min_size=grouping.num_reqs, max_size=grouping.num_reqs)
    )
    got, want = _plans(grouping, table[: grouping.num_reqs], computed, query_lens, block_size)
    assert _differences(got, want) == []


def test_plan_of_a_grouping_without_groups_equals_the_oracle():
    from arctic_inference.vllm.attention.grouping import ForestGrouping

    table = np.asarray([[1, 2], [3, 4]], dtype=np.int32)
    got, want = _plans(ForestGrouping(2, ()), table, np.asarray([32, 32]), [1, 1], 16)
    assert _differences(got, want) == []
    assert got.prefix_block_table.shape == (0, 1)


def test_first_blocks_refuse_a_batch_that_shares_no_first_block():
    assert not _first_blocks_may_pay(np.asarray([4, 1, 3, 2]), 4, ForestConfig())


def test_first_blocks_refuse_too_few_groupable_requests():
    first = np.asarray([7, 7, 1, 2, 3, 4, 5, 6, 8, 9])  # 2 of 10 could group
    assert not _first_blocks_may_pay(first, 10, ForestConfig())
    assert not _first_blocks_may_pay(first, 10, ForestConfig(min_group_size=3))
    assert _first_blocks_may_pay(first, 10, ForestConfig(min_non_singleton_fraction=0.2))


def test_first_blocks_let_a_groupable_batch_through():
    assert _first_blocks_may_pay(np.asarray([3, 1, 3, 2]), 4, ForestConfig())
