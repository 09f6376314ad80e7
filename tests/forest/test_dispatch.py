"""Full CUDA graphs and forest: the runner rules full graphs out only for steps forest groups.

Real parts: the fork's metadata builder and its planner built from a CPU ``VllmConfig``
(marked as a full-graph engine's planner, which the CPU config cannot make itself), a
real decode step of the real scheduler (4 prompts x 4 samples), the model runner's real
``BlockTable`` and vLLM's ``AttentionGroup``; the original graph-mode decision is
replaced by a recorder (it needs the GPU runner's dispatcher).
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from test_fork import _builders, _real_batch

from arctic_inference.vllm.attention import dispatch
from arctic_inference.vllm.attention.dispatch import ForestStepDispatchPatch


@pytest.fixture
def full_graph_step(tiny_llama_dir, distributed_cpu):
    """A bare GPUModelRunner whose one attention group has a full-graph forest planner."""
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner
    from vllm.v1.worker.utils import AttentionGroup

    from arctic_inference.vllm.attention.flash_attn_fork import ForestFlashAttentionBackend

    _, builder = _builders(tiny_llama_dir, forest_cascade_attn_configs="{}")
    builder.forest.full_cuda_graph = True
    common, table = _real_batch(tiny_llama_dir)
    runner = GPUModelRunner.__new__(GPUModelRunner)
    runner.attn_groups = [
        [AttentionGroup(ForestFlashAttentionBackend, ["l0"], builder.kv_cache_spec, 0, [builder])]
    ]
    runner.input_batch = types.SimpleNamespace(
        num_computed_tokens_cpu=table.num_computed(), block_table=[table.table]
    )
    return runner, builder, common


def _decide(runner, common, **kwargs):
    seen = {}

    def record(self, *args, **kw):
        seen["use_cascade_attn"] = args[4]
        seen.update(kw)
        return "decision"

    orig = ForestStepDispatchPatch._orig__determine_batch_execution_and_padding
    ForestStepDispatchPatch._orig__determine_batch_execution_and_padding = record
    try:
        query_lens = np.diff(common.query_start_loc_cpu.numpy()).astype(np.int32)
        got = ForestStepDispatchPatch._determine_batch_execution_and_padding(
            runner, common.num_actual_tokens, common.num_reqs, query_lens, 1, False, **kwargs
        )
    finally:
        ForestStepDispatchPatch._orig__determine_batch_execution_and_padding = orig
    assert got == "decision"
    return seen


def test_a_step_forest_groups_runs_piecewise_and_is_planned(full_graph_step):
    runner, builder, common = full_graph_step
    assert _decide(runner, common)["use_cascade_attn"] is True
    plan = builder.build(0, common).forest
    assert plan is not None and plan.num_groups == 4
    # The mark is for one step: the next build without a decision keeps the full graph.
    assert builder.build(0, common).forest is None
    assert builder.forest.last_reason == "the step runs a full CUDA graph"


def test_a_step_without_groups_keeps_its_full_graph(full_graph_step):
    runner, builder, common = full_graph_step
    # Every request on its own blocks: nothing to group.
    table = runner.input_batch.block_table[0].block_table.np
    rows = common.num_reqs
    table[:rows, :20] = np.arange(1000, 1000 + rows * 20).reshape(rows, 20)
    assert _decide(runner, common)["use_cascade_attn"] is False
    assert builder.forest.marked_reqs is None


def test_dummy_and_capture_runs_are_not_asked(full_graph_step, monkeypatch):
    runner, builder, common = full_graph_step
    asked = []
    monkeypatch.setattr(dispatch, "mark_forest_step", lambda *a: asked.append(a) or True)
    for kwargs in (
        {"force_has_lora": False},
        {"force_uniform_decode": True},
        {"force_eager": True},
        {"force_num_active_loras": 0},
    ):
        assert _decide(runner, common, **kwargs)["use_cascade_attn"] is False
    assert asked == []


def test_engines_without_full_graphs_are_untouched(full_graph_step):
    runner, builder, common = full_graph_step
    builder.forest.full_cuda_graph = False
    assert list(dispatch.forest_planners(runner)) == []
    assert _decide(runner, common)["use_cascade_attn"] is False
    # Without full graphs the builder plans every eligible step, as before.
    assert builder.build(0, common).forest is not None


def test_would_group_agrees_with_the_builders_plan(full_graph_step):
    runner, builder, common = full_graph_step
    planner = builder.forest
    query_lens = np.ones(common.num_reqs, dtype=np.int32)
    computed = runner.input_batch.num_computed_tokens_cpu
    host = runner.input_batch.block_table[0].block_table.np
    assert planner.would_group(query_lens, computed, host)
    assert not planner.would_group(query_lens[:7], computed[:7], host)  # under 8 requests
    planner.mark_step(common.num_reqs)
    assert builder.build(0, common).forest is not None
