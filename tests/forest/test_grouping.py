"""Prefix grouping on real vLLM block tables and scheduler outputs, knobs, eligibility."""

from __future__ import annotations

import numpy as np
import pytest
from real_scheduler import BLOCK_SIZE, RunnerBlockTable, finish_step, make_request, make_scheduler

from arctic_inference.vllm.attention.forest_config import ForestConfig
from arctic_inference.vllm.attention.grouping import find_prefix_groups, ineligible_reason


def _decode_step(scheduler, prompts: dict[str, list[int]]):
    """Add the requests, run their prefill, and return the block table of the first decode."""
    for req_id, prompt in prompts.items():
        scheduler.add_request(make_request(req_id, prompt))
    table = RunnerBlockTable()
    out = scheduler.schedule()
    table.update(out)
    finish_step(scheduler, out)
    out = scheduler.schedule()
    table.update(out)
    assert set(out.num_scheduled_tokens.values()) == {1}  # a pure decode step
    return table, out


def _ids(table: RunnerBlockTable, group) -> set[str]:
    by_row = {row: req for req, row in table.rows.items()}
    return {by_row[r] for r in group.requests}


def test_rollouts_from_the_real_scheduler_form_one_group_per_prompt(tiny_llama_dir):
    rng = np.random.default_rng(0)
    prompt_len = 200  # 12 full blocks of 16, 8 tokens in a 13th
    prompts = {}
    for p in range(8):
        prompt = rng.integers(0, 256, prompt_len).tolist()
        prompts.update({f"p{p}-s{s}": prompt for s in range(16)})
    table, _ = _decode_step(make_scheduler(tiny_llama_dir), prompts)

    grouping = find_prefix_groups(table.numpy(), table.num_computed(), BLOCK_SIZE, ForestConfig())

    assert grouping is not None
    found = sorted((sorted(_ids(table, g)), g.prefix_blocks) for g in grouping.groups)
    want = sorted(
        (sorted(f"p{p}-s{s}" for s in range(16)), prompt_len // BLOCK_SIZE) for p in range(8)
    )
    assert found == want


def test_a_shared_system_prompt_with_sampled_questions_groups_per_question(tiny_llama_dir):
    rng = np.random.default_rng(1)
    system = rng.integers(0, 256, 64).tolist()  # 4 blocks shared by all
    prompts = {}
    for q in range(4):
        question = rng.integers(0, 256, 96).tolist()  # +6 blocks shared by 4 samples
        prompts.update({f"q{q}-s{s}": system + question for s in range(4)})
    table, _ = _decode_step(make_scheduler(tiny_llama_dir), prompts)

    grouping = find_prefix_groups(table.numpy(), table.num_computed(), BLOCK_SIZE, ForestConfig())

    # A block-aligned prompt of 160 tokens is 10 blocks, but vLLM recomputes the last
    # prompt token of a full prefix-cache hit, so every sample owns its 10th block:
    # 9 are shared. One group of 16 over 4 blocks saves 15 * 4 = 60 reads; four
    # groups of 4 over 9 blocks save 4 * 3 * 9 = 108, so the split wins.
    assert grouping is not None
    found = sorted((sorted(_ids(table, g)), g.prefix_blocks) for g in grouping.groups)
    assert found == sorted((sorted(f"q{q}-s{s}" for s in range(4)), 9) for q in range(4))


def test_one_system_prompt_for_distinct_questions_is_one_group(tiny_llama_dir):
    rng = np.random.default_rng(2)
    system = rng.integers(0, 256, 128).tolist()  # 8 shared blocks
    prompts = {f"r{r}": system + rng.integers(0, 256, 40).tolist() for r in range(12)}
    table, _ = _decode_step(make_scheduler(tiny_llama_dir), prompts)

    grouping = find_prefix_groups(table.numpy(), table.num_computed(), BLOCK_SIZE, ForestConfig())

    assert grouping is not None
    assert [(len(g.requests), g.prefix_blocks) for g in grouping.groups] == [(12, 8)]


def test_no_shared_prefix_means_no_grouping(tiny_llama_dir):
    rng = np.random.default_rng(3)
    prompts = {f"r{r}": rng.integers(0, 256, 100).tolist() for r in range(16)}
    table, _ = _decode_step(make_scheduler(tiny_llama_dir), prompts)
    assert (
        find_prefix_groups(table.numpy(), table.num_computed(), BLOCK_SIZE, ForestConfig()) is None
    )


def _table(rows: list[list[int]]) -> RunnerBlockTable:
    """A real BlockTable holding the given physical block rows."""
    table = RunnerBlockTable(max_num_reqs=64, max_blocks=64)
    for i, row in enumerate(rows):
        table.rows[f"r{i}"] = i
        table.computed[f"r{i}"] = len(row) * BLOCK_SIZE
        table.table.add_row(row, i)
    return table


def _groups(rows, config=ForestConfig(), computed=None):
    table = _table(rows)
    tokens = table.num_computed() if computed is None else np.asarray(computed)
    grouping = find_prefix_groups(table.numpy(), tokens, BLOCK_SIZE, config)
    return None if grouping is None else [(g.requests, g.prefix_blocks) for g in grouping.groups]


def test_min_group_size_leaves_small_groups_out():
    rows = [[1, 2, 3, 10 + i] for i in range(4)] + [[5, 6, 20 + i] for i in range(2)]
    assert _groups(rows) == [((0, 1, 2, 3), 3), ((4, 5), 2)]
    assert _groups(rows, ForestConfig(min_group_size=3)) == [((0, 1, 2, 3), 3)]


def test_min_additional_prefix_blocks_needs_that_much_sharing():
    rows = [[1, 2, 10 + i] for i in range(4)] + [[5, 20 + i] for i in range(4)]
    assert _groups(rows) == [((0, 1, 2, 3), 2), ((4, 5, 6, 7), 1)]
    assert _groups(rows, ForestConfig(min_additional_prefix_blocks=2)) == [((0, 1, 2, 3), 2)]


def test_max_non_singleton_groups_keeps_the_groups_that_save_most():
    rows = (
        [[1, 2, 3, 4, 50 + i] for i in range(3)]  # saves 2 * 4
        + [[5, 60 + i] for i in range(3)]  # saves 2 * 1
        + [[7, 8, 70 + i] for i in range(3)]
    )  # saves 2 * 2
    assert _groups(rows, ForestConfig(max_non_singleton_groups=2)) == [
        ((0, 1, 2), 4),
        ((6, 7, 8), 2),
    ]


def test_min_non_singleton_fraction_refuses_mostly_ungrouped_batches():
    rows = [[1, 2, 100 + i] for i in range(2)] + [[200 + i, 300 + i] for i in range(8)]
    assert _groups(rows) is None  # 2 of 10 grouped < 0.25
    assert _groups(rows, ForestConfig(min_non_singleton_fraction=0.2)) == [((0, 1), 2)]


def test_prefixes_are_whole_computed_blocks_only():
    rows = [[1, 2, 3, 40 + i] for i in range(4)]
    # 47 computed tokens: 2 whole blocks, although 3 blocks are shared. All four over
    # 2 blocks and the other three over 3 both save 6 reads; the larger group is kept.
    assert _groups(rows, computed=[47, 64, 64, 64]) == [((0, 1, 2, 3), 2)]
    assert _groups(rows, computed=[47, 64, 64, 80]) == [((0, 1, 2, 3), 2)]
    assert _groups(rows, computed=[47, 47, 47, 47]) == [((0, 1, 2, 3), 2)]
    assert _groups(rows, computed=[15, 15, 15, 15]) is None


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"num_reqs": 7}, "fewer than 8 requests"),
        ({"causal": False}, "attention is not causal"),
        ({"dcp_world_size": 2}, "decode context parallelism is on"),
        ({"full_cuda_graph": True}, "the step runs a full CUDA graph"),
        ({"sliding_window": True}, "sliding-window attention"),
        ({"max_query_len": 17}, "a query is longer than max_query_len=16"),
    ],
)
def test_each_eligibility_rule(change, reason):
    base = dict(
        num_reqs=8,
        max_query_len=16,
        causal=True,
        dcp_world_size=1,
        full_cuda_graph=False,
        sliding_window=False,
        config=ForestConfig(),
    )
    assert ineligible_reason(**base) is None
    assert ineligible_reason(**{**base, **change}) == reason
