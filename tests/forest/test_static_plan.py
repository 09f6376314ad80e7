"""Static forest plans: the plan a full CUDA graph can hold.

The forward runs the PyTorch reference kernels. Checked: the static plan's output equals
the dynamic plan's and a float64 per-request attention on paged block tables (grouped,
ungrouped and mixed batches, padding requests and padding tokens); every tensor of the
plan has a shape and an address fixed by the padded batch alone, whatever the grouping
(what makes a captured graph valid on replay); the buffers are written in place; the
real builder plans a uniform decode step statically, also for the capture run, and the
runner keeps such a step on its full graph; with the key off nothing changes.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from test_dispatch import full_graph_runner, full_graph_step  # noqa: F401 (fixtures)
from test_forest_math import BLOCK, HEAD, HEADS, KV_HEADS, _paged_batch, run_forest_on_cpu

from arctic_inference.vllm.attention.forest_config import ForestConfig, parse_forest_config
from arctic_inference.vllm.attention.grouping import find_prefix_groups
from arctic_inference.vllm.attention.plan import build_forest_plan
from arctic_inference.vllm.attention.planner import STATS, static_capacity
from arctic_inference.vllm.attention.reference import (
    reference_varlen_attention,
)
from arctic_inference.vllm.attention.static_plan import StaticPlanBuffers, static_host_index

SCALE = HEAD**-0.5
WIDTH = 48  # one block-table width for every batch, as the runner's table has
CAPTURE_MAX_SEQ = 8192  # the host bound a capture passes (max_model_len)


def _padded(batch, num_reqs: int, num_tokens: int, seed: int = 0):
    """The batch as the runner hands a padded full-graph step to the builder.

    Padding requests get a null block-table row, no KV and no query tokens; padding
    tokens (rows past the last request's queries) belong to no request.
    """
    rng = np.random.default_rng(seed)
    n, t = len(batch["requests"]), int(batch["qsl"][-1])
    assert num_reqs >= n and num_tokens >= t
    table = np.zeros((num_reqs, WIDTH), dtype=np.int32)
    table[:n, : batch["table"].shape[1]] = batch["table"]
    qsl = np.concatenate([batch["qsl"], np.full(num_reqs - n, t)])
    seq_lens = np.concatenate([batch["seq_lens"], np.zeros(num_reqs - n, dtype=np.int64)])
    extra = torch.from_numpy(rng.standard_normal((num_tokens - t, HEADS, HEAD)).astype(np.float32))
    return dict(
        batch,
        table=table,
        qsl=qsl,
        seq_lens=seq_lens,
        query=torch.cat([batch["query"], extra]),
        real_reqs=n,
        real_tokens=t,
    )


def _grouping(batch):
    n = batch["real_reqs"]
    return find_prefix_groups(batch["table"][:n], batch["computed"], BLOCK, ForestConfig())


def _static_plan(batch, grouping, buffers):
    host = static_host_index(
        grouping,
        batch["qsl"],
        num_tokens=batch["query"].shape[0],
        num_reqs=batch["table"].shape[0],
        block_size=BLOCK,
    )
    return buffers.fill(
        host,
        block_table=torch.from_numpy(batch["table"]),
        seq_lens=torch.from_numpy(batch["seq_lens"]).int(),
        max_seq_len=CAPTURE_MAX_SEQ,
        num_groups=0 if grouping is None else len(grouping.groups),
    )


def _run(batch, plan):
    return run_forest_on_cpu(batch, plan, SCALE)[: batch["real_tokens"]]


def _dynamic(batch, grouping):
    n = batch["real_reqs"]
    plan = build_forest_plan(
        grouping,
        query_start_loc_cpu=batch["qsl"][: n + 1],
        block_table_cpu=batch["table"][:n],
        block_table=torch.from_numpy(batch["table"][:n]),
        seq_lens=torch.from_numpy(batch["seq_lens"][:n]).int(),
        max_seq_len=int(batch["seq_lens"].max()),
        block_size=BLOCK,
    )
    view = dict(batch, query=batch["query"][: batch["real_tokens"]], qsl=batch["qsl"][: n + 1])
    return _run(view, plan)


def _float64_attention(batch) -> torch.Tensor:
    """Each request's queries against its own blocks, causal, in float64."""
    key, value = batch["key"].double(), batch["value"].double()
    out = torch.empty((batch["real_tokens"], HEADS, HEAD), dtype=torch.float64)
    group = HEADS // KV_HEADS
    for i in range(batch["real_reqs"]):
        start, end = int(batch["qsl"][i]), int(batch["qsl"][i + 1])
        n = int(batch["seq_lens"][i])
        blocks = torch.from_numpy(batch["table"][i, : -(-n // BLOCK)]).long()
        k = key[blocks].reshape(-1, KV_HEADS, HEAD)[:n].repeat_interleave(group, 1)
        v = value[blocks].reshape(-1, KV_HEADS, HEAD)[:n].repeat_interleave(group, 1)
        q = batch["query"][start:end].double()
        scores = torch.einsum("qhd,khd->hqk", q, k) * SCALE
        visible = torch.arange(n)[None, :] <= torch.arange(end - start)[:, None] + n - (end - start)
        scores = scores.masked_fill(~visible[None], float("-inf"))
        out[start:end] = torch.einsum("hqk,khd->qhd", scores.softmax(-1), v)
    return out


CASES = {
    # (groups, singles, padded requests over the real ones)
    "grouped": ([(5, 64), (4, 128), (3, 32)], 0, 0),
    "mixed": ([(5, 64), (4, 128)], 4, 0),
    "mixed_with_padding": ([(6, 96), (3, 48)], 3, 5),
    "one_group_padded": ([(9, 160)], 0, 7),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_static_plan_equals_the_dynamic_plan_and_float64_attention(case):
    groups, singles, pad = CASES[case]
    raw = _paged_batch(
        np.random.default_rng(11), groups=groups, singles=singles, own_tokens=(3, 40)
    )
    n = len(raw["requests"])
    batch = _padded(raw, n + pad, n + pad)
    grouping = _grouping(batch)
    assert grouping is not None and len(grouping.groups) == len(groups)
    static = _run(batch, _static_plan(batch, grouping, StaticPlanBuffers(64)))
    # Same kernels on the same sequences: equal, not merely close.
    assert torch.equal(static, _dynamic(batch, grouping))
    torch.testing.assert_close(static.double(), _float64_attention(batch), atol=2e-5, rtol=2e-5)


def test_static_plan_of_an_ungrouped_step_is_plain_attention_bit_for_bit():
    raw = _paged_batch(np.random.default_rng(4), groups=[(4, 64)], singles=6, own_tokens=(3, 40))
    batch = _padded(raw, 16, 16)
    plan = _static_plan(batch, None, StaticPlanBuffers(32))
    assert plan.num_groups == 0 and plan.static
    n, t = batch["real_reqs"], batch["real_tokens"]
    plain = reference_varlen_attention(
        q=batch["query"][:t],
        k=batch["key"],
        v=batch["value"],
        cu_seqlens_q=torch.from_numpy(batch["qsl"][: n + 1]).int(),
        max_seqlen_q=1,
        seqused_k=torch.from_numpy(batch["seq_lens"][:n]).int(),
        max_seqlen_k=int(batch["seq_lens"].max()),
        softmax_scale=SCALE,
        causal=True,
        block_table=torch.from_numpy(batch["table"][:n]),
    )
    assert torch.equal(_run(batch, plan), plain)
    torch.testing.assert_close(plain.double(), _float64_attention(batch), atol=2e-5, rtol=2e-5)


def test_a_broken_empty_sequence_is_caught():
    """The comparison is not vacuous: if the sequence of ungrouped tokens had KV, their
    rows would attend to blocks that are not theirs and differ from the reference."""
    raw = _paged_batch(np.random.default_rng(5), groups=[(5, 64)], singles=5, own_tokens=(3, 40))
    batch = _padded(raw, 12, 12)
    grouping = _grouping(batch)
    plan = _static_plan(batch, grouping, StaticPlanBuffers(16))
    plan.prefix_seqused_k[len(grouping.groups)] = BLOCK  # the empty-KV sequence
    got = _run(batch, plan).double()
    want = _float64_attention(batch)
    ungrouped = [i for i in range(batch["real_reqs"]) if i not in grouping.groups[0].requests]
    assert ungrouped
    assert (got[ungrouped] - want[ungrouped]).abs().max() > 1e-2


def _signature(plan) -> list:
    """What a captured graph bakes in: tensor shapes, dtypes, addresses, host integers."""
    out = []
    for field in dataclasses.fields(plan):
        value = getattr(plan, field.name)
        if isinstance(value, torch.Tensor):
            out.append((field.name, tuple(value.shape), value.dtype, value.data_ptr()))
        elif field.name != "num_groups":  # a host count the static forward does not read
            out.append((field.name, value))
    return out


def test_every_plan_tensor_depends_only_on_the_padded_batch():
    buffers = StaticPlanBuffers(40)
    shapes = {
        "none": ([(4, 64)], 8),
        "one": ([(12, 64)], 0),
        "three": ([(4, 64), (4, 96), (4, 32)], 0),
    }
    signatures, contents = {}, {}
    for name, (groups, singles) in shapes.items():
        raw = _paged_batch(
            np.random.default_rng(7), groups=groups, singles=singles, own_tokens=(3, 30)
        )
        batch = _padded(raw, 24, 24)
        grouping = _grouping(batch) if name != "none" else None
        plan = _static_plan(batch, grouping, buffers)
        assert plan.num_groups == len(groups) if grouping is not None else plan.num_groups == 0
        signatures[name] = _signature(plan)
        contents[name] = plan.prefix_cu_seqlens_q.tolist()
    assert signatures["none"] == signatures["one"] == signatures["three"]
    # The same addresses hold different plans: the buffers are written in place.
    assert contents["none"] != contents["one"] != contents["three"]
    assert contents["none"] == [0] + [24] * 24
    # Another padded size takes other views of the same buffers.
    raw = _paged_batch(np.random.default_rng(7), groups=[(4, 64)], singles=0, own_tokens=(3, 30))
    other = _signature(_static_plan(_padded(raw, 8, 8), None, buffers))
    assert [s[1] for s in other if len(s) == 4] != [s[1] for s in signatures["none"] if len(s) == 4]


def test_host_index_puts_every_token_in_exactly_one_virtual_sequence():
    raw = _paged_batch(
        np.random.default_rng(2), groups=[(3, 32), (4, 64)], singles=2, own_tokens=(3, 20)
    )
    batch = _padded(raw, 12, 12)
    grouping = _grouping(batch)
    host = static_host_index(grouping, batch["qsl"], num_tokens=12, num_reqs=12, block_size=BLOCK)
    assert sorted(host.token_index.tolist()) == list(range(12))
    assert host.cu_seqlens.tolist()[:4] == [0, 3, 7, 12] and host.cu_seqlens[-1] == 12
    assert host.prefix_kv.tolist()[:3] == [2 * BLOCK, 4 * BLOCK, 0] and not host.prefix_kv[2:].any()
    members = [r for g in grouping.groups for r in g.requests]
    assert host.token_index[:7].tolist() == [int(batch["qsl"][m]) for m in members]
    with pytest.raises(ValueError):
        static_host_index(grouping, batch["qsl"][:5], num_tokens=12, num_reqs=12, block_size=BLOCK)


def test_static_plans_need_the_key_and_separate_decode_graphs():
    from vllm.config import CUDAGraphMode

    on = parse_forest_config('{"full_cuda_graphs": true}')
    off = parse_forest_config("{}")
    assert off.full_cuda_graphs is False and on.full_cuda_graphs is True

    def cap(config, mode, size=512):
        return static_capacity(
            config, cudagraph_mode=mode, max_cudagraph_size=size, max_num_seqs=256
        )

    assert cap(on, CUDAGraphMode.FULL_AND_PIECEWISE) == 512
    assert cap(on, CUDAGraphMode.FULL_DECODE_ONLY, size=128) == 256
    assert cap(off, CUDAGraphMode.FULL_AND_PIECEWISE) is None
    for mode in (CUDAGraphMode.FULL, CUDAGraphMode.PIECEWISE, CUDAGraphMode.NONE):
        assert cap(on, mode) is None
    assert cap(on, CUDAGraphMode.FULL_AND_PIECEWISE, size=0) is None
    with pytest.raises(ValueError, match="full_cuda_graphs must be true or false"):
        parse_forest_config('{"full_cuda_graphs": 1}')


# The real builder and runner dispatch (vLLM 0.26.0 objects on the CPU).


@pytest.fixture
def static_builder(tiny_llama_dir, distributed_cpu):
    from test_fork import _builders

    _, builder = _builders(tiny_llama_dir, forest_cascade_attn_configs='{"full_cuda_graphs": true}')
    assert builder.forest.config.full_cuda_graphs
    assert builder.forest.static is None  # the CPU config captures no full graphs
    # As in an engine whose decode steps run full graphs.
    builder.forest.full_cuda_graph = True
    builder.forest.static = StaticPlanBuffers(64)
    return builder


def _padded_common(common, num_reqs):
    """The runner's padded full-graph step: null rows, no KV, no queries past the real ones."""
    n = common.num_reqs
    qsl = torch.cat([common.query_start_loc_cpu, torch.full((num_reqs - n,), n, dtype=torch.int32)])
    seq_lens = torch.cat([common.seq_lens, torch.zeros(num_reqs - n, dtype=torch.int32)])
    table = torch.zeros((num_reqs, common.block_table_tensor.shape[1]), dtype=torch.int32)
    table[:n] = common.block_table_tensor
    return common.replace(
        query_start_loc=qsl,
        query_start_loc_cpu=qsl.clone(),
        seq_lens=seq_lens,
        seq_lens_cpu_upper_bound=seq_lens.clone(),
        num_reqs=num_reqs,
        num_actual_tokens=num_reqs,
        block_table_tensor=table,
        slot_mapping=torch.zeros(num_reqs, dtype=torch.int64),
    )


def test_builder_plans_a_padded_decode_step_statically_on_real_block_tables(
    static_builder, tiny_llama_dir
):
    from test_fork import _real_batch

    common, _ = _real_batch(tiny_llama_dir)
    padded = _padded_common(common, 20)
    before = dict(STATS)
    plan = static_builder.build(0, padded).forest
    assert plan is not None and plan.static and plan.num_groups == 4
    assert STATS["static"] - before["static"] == 1 and STATS["planned"] - before["planned"] == 1
    assert tuple(plan.prefix_token_index.shape) == (20,)
    assert tuple(plan.prefix_cu_seqlens_q.shape) == (21,)
    assert tuple(plan.suffix_block_table.shape) == (20, common.block_table_tensor.shape[1])
    # The forward on the scheduler's real tables equals float64 attention.
    rng = np.random.default_rng(3)
    blocks = int(common.block_table_tensor.max()) + 1
    key = torch.from_numpy(rng.standard_normal((blocks, BLOCK, KV_HEADS, HEAD)).astype(np.float32))
    value = torch.from_numpy(
        rng.standard_normal((blocks, BLOCK, KV_HEADS, HEAD)).astype(np.float32)
    )
    batch = dict(
        key=key,
        value=value,
        table=padded.block_table_tensor.numpy(),
        qsl=padded.query_start_loc_cpu.numpy().astype(np.int64),
        seq_lens=padded.seq_lens.numpy().astype(np.int64),
        query=torch.from_numpy(rng.standard_normal((20, HEADS, HEAD)).astype(np.float32)),
        real_reqs=16,
        real_tokens=16,
    )
    torch.testing.assert_close(
        _run(batch, plan).double(), _float64_attention(batch), atol=2e-5, rtol=2e-5
    )


def test_the_capture_run_gets_an_ungrouped_plan_of_the_replayed_shape(
    static_builder, tiny_llama_dir
):
    from test_fork import _real_batch

    common, _ = _real_batch(tiny_llama_dir)
    ones = torch.ones(16, dtype=torch.int32)
    capture = common.replace(
        seq_lens=ones,
        seq_lens_cpu_upper_bound=ones.clone(),
        max_seq_len=CAPTURE_MAX_SEQ,
        block_table_tensor=torch.zeros_like(common.block_table_tensor),
    )
    captured = static_builder.build_for_cudagraph_capture(capture).forest
    assert captured is not None and captured.static and captured.num_groups == 0
    shape = _signature(captured)
    replay = static_builder.build(0, common.replace(max_seq_len=CAPTURE_MAX_SEQ)).forest
    assert replay.num_groups == 4
    assert _signature(replay) == shape


def test_update_block_table_refills_a_static_plan_and_drops_a_dynamic_one(
    static_builder, tiny_llama_dir
):
    from test_fork import _real_batch

    common, _ = _real_batch(tiny_llama_dir)
    meta = static_builder.build(0, common)
    other = common.block_table_tensor.flip(0).contiguous()
    swapped = static_builder.update_block_table(meta, other, common.slot_mapping).forest
    assert swapped is not None and swapped.static and swapped.num_groups == 0
    assert torch.equal(swapped.suffix_block_table, other)
    assert torch.equal(swapped.suffix_seqused_k, common.seq_lens)
    static_builder.forest.static = None  # the dynamic path
    static_builder.forest.marked_reqs = common.num_reqs
    meta = static_builder.build(0, common)
    assert meta.forest is not None and not meta.forest.static
    assert static_builder.update_block_table(meta, other, common.slot_mapping).forest is None


def test_a_grouped_decode_step_keeps_its_full_graph_and_is_counted(
    full_graph_runner,  # noqa: F811 (the fixture imported above)
    reverted_patches,
):
    from test_dispatch import _real_decision
    from vllm.config import CUDAGraphMode

    from arctic_inference.vllm.attention.dispatch import ForestStepDispatchPatch

    ForestStepDispatchPatch.apply()
    runner, builder, common = full_graph_runner
    # Key off (the fixture's planner): the grouped step is ruled out of full graphs.
    assert builder.forest.static is None
    assert _real_decision(runner, common)[0] == CUDAGraphMode.PIECEWISE
    builder.forest.marked_reqs = None
    # Key on: the same step keeps its full graph and gets a grouped static plan.
    builder.forest.static = StaticPlanBuffers(32)
    before = dict(STATS)
    mode, descriptor = _real_decision(runner, common)
    assert mode == CUDAGraphMode.FULL and descriptor.num_tokens == 16
    assert builder.forest.marked_reqs is None
    plan = builder.build(0, common).forest
    assert plan.static and plan.num_groups == 4
    assert STATS["static_full_grouped"] - before["static_full_grouped"] == 1
    assert STATS["static_full"] - before["static_full"] == 1
    # A step the runner does not run on a full graph is planned but not counted as one.
    builder.build(0, common)
    assert STATS["static_full"] - before["static_full"] == 1
    assert STATS["static_grouped"] - before["static_grouped"] == 2


def test_a_grouped_mixed_step_keeps_the_dynamic_path_with_the_key_on(
    full_graph_runner,  # noqa: F811 (the fixture imported above)
    reverted_patches,
):
    from test_dispatch import _real_decision
    from test_fork import _mixed_batch
    from vllm.config import CUDAGraphMode

    from arctic_inference.vllm.attention.dispatch import ForestStepDispatchPatch

    ForestStepDispatchPatch.apply()
    runner, builder, common = full_graph_runner
    builder.forest.static = StaticPlanBuffers(32)
    mixed = _mixed_batch(common)
    assert _real_decision(runner, mixed)[0] == CUDAGraphMode.PIECEWISE
    assert builder.forest.marked_reqs == mixed.num_reqs  # asked and marked, as without the key
    plan = builder.build(0, mixed).forest
    assert plan is not None and not plan.static and plan.num_groups == 4


@pytest.mark.parametrize("knobs, on", [("{}", False), ('{"full_cuda_graphs": true}', True)])
def test_a_full_graph_engines_planner_plans_statically_only_with_the_key(
    tiny_llama_dir, distributed_cpu, knobs, on
):
    from test_fork import _builders
    from vllm.config import CompilationConfig, CUDAGraphMode

    from arctic_inference.vllm.attention.planner import ForestPlanner

    _, builder = _builders(tiny_llama_dir, forest_cascade_attn_configs=knobs)
    graphs = CompilationConfig(
        cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE,
        cudagraph_capture_sizes=[8, 16, 32],
        max_cudagraph_capture_size=32,
    )
    object.__setattr__(builder.vllm_config, "compilation_config", graphs)
    builder.use_full_cuda_graph = True
    planner = ForestPlanner.for_builder(builder)
    capacity = None if planner.static is None else planner.static.capacity
    max_num_seqs = builder.vllm_config.scheduler_config.max_num_seqs
    assert capacity == (max(32, max_num_seqs) if on else None)
