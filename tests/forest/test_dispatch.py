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


@pytest.fixture
def full_graph_runner(full_graph_step):
    """The runner of ``full_graph_step`` with vLLM's real dispatcher of full and piecewise graphs."""
    from vllm.config import CompilationConfig, CUDAGraphMode
    from vllm.config.compilation import CompilationMode
    from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher

    runner, builder, common = full_graph_step
    graphs = CompilationConfig(
        mode=CompilationMode.VLLM_COMPILE,
        cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE,
        cudagraph_capture_sizes=[1, 2, 4, 8, 16, 32],
        max_cudagraph_capture_size=32,
    )
    graphs.set_splitting_ops_for_v1(all2all_backend="naive", data_parallel_size=1)
    config = builder.vllm_config
    object.__setattr__(config, "compilation_config", graphs)
    dispatcher = CudagraphDispatcher(config)
    dispatcher.initialize_cudagraph_keys(CUDAGraphMode.FULL_AND_PIECEWISE, 1)
    runner.vllm_config = config
    runner.compilation_config = graphs
    runner.parallel_config = config.parallel_config
    runner.model_config = config.model_config
    runner.cudagraph_dispatcher = dispatcher
    runner.uniform_decode_query_len = 1
    runner.input_batch.lora_id_to_lora_request = {}
    return runner, builder, common


def _real_decision(runner, common):
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    query_lens = np.diff(common.query_start_loc_cpu.numpy()).astype(np.int32)
    mode, descriptor, *_ = GPUModelRunner._determine_batch_execution_and_padding(
        runner, common.num_actual_tokens, common.num_reqs, query_lens, 1, False
    )
    return mode, descriptor


def test_vllms_own_dispatch_picks_piecewise_only_for_the_grouped_step(
    full_graph_runner, reverted_patches
):
    from vllm.config import CUDAGraphMode

    ForestStepDispatchPatch.apply()
    runner, builder, common = full_graph_runner
    mode, descriptor = _real_decision(runner, common)
    assert mode == CUDAGraphMode.PIECEWISE and descriptor.num_tokens == 16
    assert builder.build(0, common).forest is not None
    # The same 16-request decode step without shared blocks replays its full graph.
    table = runner.input_batch.block_table[0].block_table.np
    table[: common.num_reqs, :20] = np.arange(1000, 1000 + common.num_reqs * 20).reshape(-1, 20)
    mode, _ = _real_decision(runner, common)
    assert mode == CUDAGraphMode.FULL
    assert builder.forest.marked_reqs is None
