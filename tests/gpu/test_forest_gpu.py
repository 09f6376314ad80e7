"""Forest Cascade Attention on the GPU: exact when off, within tolerance when on, end to end.

Per layer (in process): the fork's builder + impl against vLLM 0.26.0's own
FlashAttention on the same batch and KV cache.
End to end (one subprocess per engine, tests/gpu/forest_gpu_scenarios.py; two workloads
per engine: greedy rollouts, 8 prompts x 16 copies, and 64 requests under one shared
prefix): vLLM's own FLASH_ATTN (plugin off, cascade off) twice, vLLM's own cascade, the
plugin on with no forest config (the fork is installed, forest inactive) and forest.
Where ids differ, tests/gpu/greedy_compare.py says whether the first divergence is a
near-tie. Per layer on the rollouts' decode shape (dynamic and static plans): within one bf16 step
of FlashAttention's own error (two stored partials round once more than one pass); static
plans (``full_cuda_graphs``): one layer captured in a CUDA graph and
replayed on another batch's plan, and an engine with full-and-piecewise graphs whose
grouped decode steps run forest inside the full graphs.

Run (on the GPU machine, from the repo root, after ``source .gpu2/device-env.sh``):
    bash tests/gpu/device_run.sh install
    bash tests/gpu/device_run.sh pytest tests/gpu/test_forest_gpu.py
Models: $ARCTIC_TEST_MODELS (default /opt/models) with small-llama. About 6 minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import greedy_compare  # noqa: E402

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
MODELS = Path(os.environ.get("ARCTIC_TEST_MODELS", "/opt/models"))
SCENARIOS = Path(__file__).with_name("forest_gpu_scenarios.py")
HEADS, KV_HEADS, HEAD = 32, 8, 64  # small-llama's attention shape
GROUPS = [(16, 1024), (16, 2048), (8, 512), (4, 4096)]


@pytest.fixture(scope="module")
def modules():
    sys.path.insert(0, str(Path(__file__).parent))
    import forest_layer
    from vllm.config import set_current_vllm_config

    config = _config()
    with set_current_vllm_config(config):
        from vllm.v1.attention.backends import flash_attn as upstream

        from arctic_inference.vllm.attention import flash_attn_fork as fork
    return forest_layer, upstream, fork


def _config(**arctic):
    sys.path.insert(0, str(Path(__file__).parent))
    import forest_layer

    return forest_layer.engine_config(heads=HEADS, kv_heads=KV_HEADS, head=HEAD, **arctic)


@pytest.mark.parametrize("seed", [0, 1])
def test_forest_off_is_upstream_bit_for_bit(modules, seed):
    from vllm.config import set_current_vllm_config

    layer, upstream, fork = modules
    with set_current_vllm_config(_config()):
        batch = layer.make_batch(
            groups=GROUPS,
            singles=8,
            own=(16, 300),
            heads=HEADS,
            kv_heads=KV_HEADS,
            head=HEAD,
            seed=seed,
        )
    shape = dict(heads=HEADS, kv_heads=KV_HEADS, head=HEAD)
    want, _ = layer.run_layer(upstream, _config(), batch, **shape)
    got, meta = layer.run_layer(fork, _config(), batch, **shape)
    assert meta.forest is None
    assert want.isfinite().all()
    assert got.equal(want)


def test_vllms_cascade_through_the_fork_is_upstream_bit_for_bit(modules):
    from vllm.config import set_current_vllm_config

    layer, upstream, fork = modules
    with set_current_vllm_config(_config()):
        batch = layer.make_batch(
            groups=[(24, 1024)],
            singles=0,
            own=(16, 300),
            heads=HEADS,
            kv_heads=KV_HEADS,
            head=HEAD,
            seed=3,
        )
    shape = dict(heads=HEADS, kv_heads=KV_HEADS, head=HEAD)
    want, meta_up = layer.run_layer(upstream, _config(), batch, common_prefix_len=1024, **shape)
    got, meta = layer.run_layer(fork, _config(), batch, common_prefix_len=1024, **shape)
    assert meta_up.use_cascade and meta.use_cascade and meta.forest is None
    assert got.equal(want)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forest_on_is_within_flash_attentions_own_error(modules, seed):
    from vllm.config import set_current_vllm_config

    layer, upstream, fork = modules
    with set_current_vllm_config(_config()):
        batch = layer.make_batch(
            groups=GROUPS,
            singles=8,
            own=(16, 300),
            heads=HEADS,
            kv_heads=KV_HEADS,
            head=HEAD,
            seed=seed,
        )
    shape = dict(heads=HEADS, kv_heads=KV_HEADS, head=HEAD)
    flash, _ = layer.run_layer(upstream, _config(), batch, **shape)
    forest, meta = layer.run_layer(fork, _config(forest_cascade_attn_configs="{}"), batch, **shape)
    assert meta.forest is not None and meta.forest.num_groups == len(GROUPS)
    ref = layer.float32_reference(batch, head=HEAD)
    flash_err = (flash.float() - ref).abs().max().item()
    forest_err = (forest.float() - ref).abs().max().item()
    print(
        f"seed {seed}: max |flash - fp32| = {flash_err:.3e}, max |forest - fp32| = {forest_err:.3e}, "
        f"max |forest - flash| = {(forest.float() - flash.float()).abs().max().item():.3e}"
    )
    assert forest_err <= flash_err


# The rollouts' decode shape: 8 prompts x 16 samples under 4k-token prompts.
ROLLOUT_GROUPS = [(16, 4096)] * 8


@pytest.mark.parametrize("seed", [0, 1])
def test_forest_on_rollout_batches_is_within_one_bf16_step_of_flash_attentions_error(modules, seed):
    """On the rollouts' own decode shape every request is grouped under a long prefix,
    and forest's two stored bf16 partials (prefix, suffix) round once more than
    FlashAttention's single pass: seed 0 measured 1.5x FlashAttention's distance from
    float32 for the dynamic plan, which ``tests/forest/test_bf16_rounding.py`` shows is
    rounding alone. So the bound here is FlashAttention's error plus one bf16 step at the
    output's magnitude, for the dynamic plan and for static plans (full graphs) with the
    builder's split cap and with FA3's own choice; a wrong block or group errs by far
    more. What it prints tells whether a static plan equals the dynamic one bit for bit."""
    import torch
    from vllm.config import get_current_vllm_config, set_current_vllm_config

    from arctic_inference.vllm.attention.reference import bf16_step

    layer, upstream, fork = modules
    shape = dict(heads=HEADS, kv_heads=KV_HEADS, head=HEAD)
    with set_current_vllm_config(_config()):
        batch = layer.make_batch(
            groups=ROLLOUT_GROUPS, singles=0, own=(16, 272), seed=seed, **shape
        )
        cap = get_current_vllm_config().attention_config.flash_attn_max_num_splits_for_cuda_graph
    flash, _ = layer.run_layer(upstream, _config(), batch, **shape)
    dynamic, meta = layer.run_layer(fork, _config(forest_cascade_attn_configs="{}"), batch, **shape)
    assert meta.forest is not None and meta.forest.num_groups == len(ROLLOUT_GROUPS)
    static_config = _config(forest_cascade_attn_configs='{"full_cuda_graphs": true}')
    ref = layer.float32_reference(batch, head=HEAD)
    flash_err = (flash.float() - ref).abs().max().item()
    step = bf16_step(ref.abs().max().item())
    errors = {"dynamic": (dynamic.float() - ref).abs().max().item()}
    for splits in (cap, 0):
        static, _ = layer.run_layer(fork, static_config, batch, static_splits=splits, **shape)
        errors[f"static, {splits} splits"] = (static.float() - ref).abs().max().item()
        print(
            f"seed {seed}: static plan with num_splits={splits}: "
            f"max |static - dynamic| = {(static.float() - dynamic.float()).abs().max().item():.3e}"
            f", bit for bit: {torch.equal(static, dynamic)}"
        )
    print(f"seed {seed}: max |flash - fp32| = {flash_err:.3e}, one bf16 step {step:.3e}; " + ", ".join(
        f"max |{name} - fp32| = {err:.3e} (x{err / flash_err:.2f})" for name, err in errors.items()
    ))  # fmt: skip
    assert all(err <= flash_err + step for err in errors.values()), (flash_err, step, errors)


def _run(label: str, *args: str, plugin: bool = True, timeout: int = 480) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCTIC_")}
    env.update(
        ARCTIC_INFERENCE_ENABLED="1" if plugin else "0",
        VLLM_ENABLE_V1_MULTIPROCESSING="0",
        VLLM_USE_V2_MODEL_RUNNER="0",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    log = Path(os.environ.get("OUT", "/tmp")) / f"forest-{label}.log"
    with open(log, "w") as handle:
        proc = subprocess.run(
            [sys.executable, str(SCENARIOS), *args],
            env=env,
            cwd=REPO,
            stdout=handle,
            stderr=subprocess.STDOUT,
            timeout=timeout,
        )
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"{label} failed (rc {proc.returncode}); see {log}"
    return json.loads(lines[-1][len("RESULT ") :])


UPSTREAM_FLASH = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"
FORK = "arctic_inference.vllm.attention.flash_attn_fork.ForestFlashAttentionBackend"


@pytest.fixture(scope="module")
def upstream_runs() -> tuple[dict, dict]:
    """vLLM's own FlashAttention (plugin off, cascade off), the same requests twice."""
    model = str(MODELS / "small-llama")
    runs = tuple(
        _run(f"upstream-{tag}", "--model", model, "--config", "flash", plugin=False) for tag in "ab"
    )
    for run in runs:
        assert run["backends"] == [UPSTREAM_FLASH]
    return runs


@pytest.fixture(scope="module")
def upstream_full_graphs_run() -> dict:
    """vLLM's own FlashAttention with its default full-and-piecewise graphs: its decode
    steps replay full graphs, as forest's static plans do, so the full-graph test compares
    like with like. (On the H200, 2026-12-03, its ids and logprobs equalled piecewise
    FLASH_ATTN's exactly: the graph mode alone moves nothing.)"""
    run = _run(
        "upstream-full-graphs",
        "--model",
        str(MODELS / "small-llama"),
        "--config",
        "flash",
        "--cudagraph-mode",
        "FULL_AND_PIECEWISE",
        plugin=False,
    )
    assert run["backends"] == [UPSTREAM_FLASH]
    return run


@pytest.fixture(scope="module")
def forest_run() -> dict:
    run = _run("forest", "--model", str(MODELS / "small-llama"), "--config", "forest")
    assert run["backends"] == [FORK]
    return run


@pytest.fixture(scope="module")
def vllm_cascade_run() -> dict:
    """vLLM's own single-prefix cascade: the upstream two-pass algorithm forest generalises."""
    run = _run(
        "vllm-cascade",
        "--model",
        str(MODELS / "small-llama"),
        "--config",
        "flash-cascade",
        plugin=False,
    )
    assert run["backends"] == [UPSTREAM_FLASH]
    return run


def _share(a: dict, b: dict, *, logprobs: bool = False) -> float:
    """Share of requests whose greedy ids (and, if asked, sampled logprobs) are equal."""
    keys = ("outputs", "logprobs") if logprobs else ("outputs",)
    rows = list(zip(*(a[k] for k in keys), *(b[k] for k in keys), strict=True))
    n = len(keys)
    return sum(row[:n] == row[n:] for row in rows) / len(rows)


def test_plugin_on_without_forest_is_upstream_flash_attn_end_to_end(upstream_runs):
    """The install rule puts the fork in whenever the plugin is on: without a forest
    config the engine must answer like vLLM's own FlashAttention, ids and logprobs."""
    up_a, up_b = upstream_runs
    fork_off = _run("fork-off", "--model", str(MODELS / "small-llama"), "--config", "flash")
    assert fork_off["backends"] == [FORK]  # the fork really served the layers
    for workload in ("rollouts", "one_prefix"):
        assert fork_off[workload]["forest_planned_steps"] == 0
        self_exact = _share(up_a[workload], up_b[workload], logprobs=True)
        fork_exact = _share(up_a[workload], fork_off[workload], logprobs=True)
        print(
            f"{workload}: ids and logprobs identical: upstream vs itself {self_exact:.3f}, "
            f"plugin on (forest off) vs upstream {fork_exact:.3f}"
        )
        assert fork_exact >= self_exact


def test_one_prefix_group_is_vllms_own_cascade_bit_for_bit(
    upstream_runs, forest_run, vllm_cascade_run
):
    """One shared prefix, the batch vLLM's cascade is built for: forest (one group) must
    give vLLM's own cascade's ids and logprobs exactly, whatever either does against
    FLASH_ATTN with cascade off (printed: a two-pass merge rounds differently in bf16)."""
    forest, cascade = forest_run["one_prefix"], vllm_cascade_run["one_prefix"]
    assert forest["forest_planned_steps"] > 0  # forest attention really ran
    flash = upstream_runs[0]["one_prefix"]
    print(
        f"one_prefix, vLLM cascade vs FLASH_ATTN: {greedy_compare.compare(flash, cascade).summary()}"
    )
    print(f"one_prefix, forest vs FLASH_ATTN: {greedy_compare.compare(flash, forest).summary()}")
    assert forest["outputs"] == cascade["outputs"]
    assert forest["logprobs"] == cascade["logprobs"]


def test_greedy_rollouts_match_flash_attn_or_diverge_no_more_than_vllms_cascade(
    upstream_runs, forest_run, vllm_cascade_run
):
    """Rollouts (8 prefix groups of 16): forest's ids equal FLASH_ATTN's for at least the
    share FLASH_ATTN matches itself; where they do not, every first divergence must be a
    tie no wider (in FLASH_ATTN's logprobs) than the widest at which vLLM's own cascade
    leaves FLASH_ATTN on the one-prefix batch, and tokens both agree on must move no
    more than under vLLM's cascade. A wrong group or block shows as a wider gap or a
    larger movement."""
    flash_a, flash_b = (run["rollouts"] for run in upstream_runs)
    forest = forest_run["rollouts"]
    assert forest["forest_planned_steps"] > 0  # forest attention really ran
    self_share = _share(flash_a, flash_b)
    comparison = greedy_compare.compare(flash_a, forest)
    cascade = greedy_compare.compare(upstream_runs[0]["one_prefix"], vllm_cascade_run["one_prefix"])
    print(
        f"rollouts: FLASH_ATTN vs itself {self_share:.3f}; forest vs FLASH_ATTN: {comparison.summary()}"
    )
    print(f"baseline, vLLM cascade vs FLASH_ATTN (one_prefix): {cascade.summary()}")
    _assert_within_the_cascade_tie_rule(comparison, self_share, cascade, agreed_delta=True)


def _assert_within_the_cascade_tie_rule(comparison, self_share, cascade, agreed_delta=False):
    """The rollouts' rule: ids as often identical to FLASH_ATTN as FLASH_ATTN is to itself,
    or else every first divergence a tie no wider than the widest vLLM's own cascade makes
    on the one-prefix batch (and, with ``agreed_delta``, agreed tokens moving no more)."""
    if comparison.identical_share >= self_share:
        return
    assert cascade.divergences, "vLLM's cascade matched FLASH_ATTN exactly: no baseline gap"
    widest = max(cascade.gaps())
    if agreed_delta:
        assert comparison.agreed_delta <= cascade.agreed_delta
    wide = [d for d in comparison.divergences if d.gap is None or d.gap > widest]
    assert not wide, (widest, wide)


def test_forest_in_an_engine_with_full_graphs_runs_grouped_steps_piecewise(
    upstream_runs, forest_run, vllm_cascade_run
):
    """With full CUDA graphs on, the runner rules them out for the steps forest groups
    (and only those): forest must still run, and its rollouts must stay as close to
    FLASH_ATTN as the piecewise forest engine is (same tie rule as above)."""
    full = _run(
        "forest-full",
        "--model",
        str(MODELS / "small-llama"),
        "--config",
        "forest",
        "--cudagraph-mode",
        "FULL_AND_PIECEWISE",
    )
    assert full["backends"] == [FORK]
    flash_a, flash_b = (run["rollouts"] for run in upstream_runs)
    for workload in ("rollouts", "one_prefix"):
        assert full[workload]["forest_planned_steps"] > 0, workload
    comparison = greedy_compare.compare(flash_a, full["rollouts"])
    piecewise = greedy_compare.compare(flash_a, forest_run["rollouts"])
    cascade = greedy_compare.compare(upstream_runs[0]["one_prefix"], vllm_cascade_run["one_prefix"])
    print(f"rollouts, forest with full graphs vs FLASH_ATTN: {comparison.summary()}")
    print(f"rollouts, forest piecewise vs FLASH_ATTN: {piecewise.summary()}")
    _assert_within_the_cascade_tie_rule(comparison, _share(flash_a, flash_b), cascade)


def test_forest_static_plans_run_grouped_decode_steps_inside_full_graphs(
    upstream_runs, upstream_full_graphs_run, forest_run, vllm_cascade_run
):
    """With ``full_cuda_graphs`` on and full-and-piecewise graphs, the uniform-decode
    full graphs hold the forest kernels: grouped decode steps keep their full graphs and
    run forest there (counted by the planner, with no forest forward run from Python
    for them), and the rollouts stay as close to FLASH_ATTN in the same graph mode as
    the piecewise forest engine is to piecewise FLASH_ATTN (same tie rule as above).

    The reference runs the same graph mode, so that no difference of graph mode is
    booked to forest (FLASH_ATTN's own full-vs-piecewise difference is printed beside
    it; on the H200 it was none)."""
    full = _run(
        "forest-static-full",
        "--model",
        str(MODELS / "small-llama"),
        "--config",
        "forest",
        "--cudagraph-mode",
        "FULL_AND_PIECEWISE",
        "--forest-full-graphs",
    )
    assert full["backends"] == [FORK]
    layers = full["attention_layers"]
    assert layers > 0
    for workload in ("rollouts", "one_prefix"):
        stats = full[workload]["forest_stats"]
        print(f"{workload}, static plans in full graphs: {stats}")
        assert stats["planned"] > 0, workload
        assert stats["static_full_grouped"] > 0, workload  # grouped steps ran in full graphs
        # Python runs the forest forward (once per layer) only for steps not replayed
        # from a full graph: dynamic plans and static plans of other steps.
        dynamic = stats["planned"] - stats["static_grouped"]
        eager_static = stats["static"] - stats["static_full"]
        assert stats["forward_calls"] == layers * (dynamic + eager_static), workload
    flash_a, flash_b = (run["rollouts"] for run in upstream_runs)
    flash_full = upstream_full_graphs_run["rollouts"]
    comparison = greedy_compare.compare(flash_full, full["rollouts"])
    cascade = greedy_compare.compare(upstream_runs[0]["one_prefix"], vllm_cascade_run["one_prefix"])
    print(
        "rollouts, FLASH_ATTN full graphs vs piecewise: "
        f"{greedy_compare.compare(flash_a, flash_full).summary()}"
    )
    print(
        "rollouts, forest static plans in full graphs vs piecewise FLASH_ATTN: "
        f"{greedy_compare.compare(flash_a, full['rollouts']).summary()}"
    )
    print(
        f"rollouts, forest static plans in full graphs vs FLASH_ATTN in full graphs: "
        f"{comparison.summary()}"
    )
    _assert_within_the_cascade_tie_rule(comparison, _share(flash_a, flash_b), cascade)


def test_a_captured_static_plan_replays_other_groupings(modules):
    """One layer's forest forward captured in a CUDA graph on one batch's static plan,
    then replayed after the builder refilled the same buffers for another batch of the
    same padded size (other groups, ungrouped and padding requests): the replay must
    equal the eager forward on that batch, and stay within FlashAttention's own error."""
    import numpy as np
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    from arctic_inference.vllm.attention.kv_layout import allocate_kv_cache, kv_cache_layout
    from arctic_inference.vllm.attention.static_plan import StaticPlanBuffers

    layer, upstream, fork = modules
    shape = dict(heads=HEADS, kv_heads=KV_HEADS, head=HEAD)
    config = _config(forest_cascade_attn_configs='{"full_cuda_graphs": true}')
    with set_current_vllm_config(config):
        first = layer.make_batch(
            groups=[(16, 1024), (16, 2048)], singles=16, own=(16, 300), seed=5, **shape
        )
        second = layer.make_batch(
            groups=[(8, 512), (8, 1024), (8, 256)], singles=16, own=(16, 300), seed=6, **shape
        )
    reqs, width = 48, max(first.table.shape[1], second.table.shape[1])
    assert len(first.seq_lens) == reqs and len(second.seq_lens) == 40
    device = first.query.device
    backend = fork.ForestFlashAttentionBackend
    with set_current_vllm_config(config):
        axis = kv_cache_layout(backend).axis("blocks")
        blocks = max(first.kv_cache.shape[axis], second.kv_cache.shape[axis])
        # Runner-owned inputs: one address each for every step, as in the model runner.
        kv = allocate_kv_cache(
            backend,
            num_blocks=blocks,
            block_size=16,
            num_kv_heads=KV_HEADS,
            head_size=HEAD,
            dtype=first.query.dtype,
            device=device,
        )
    query = torch.zeros((reqs, HEADS, HEAD), dtype=first.query.dtype, device=device)
    out = torch.zeros_like(query)
    qsl = torch.zeros(reqs + 1, dtype=torch.int32, device=device)
    seq_lens = torch.zeros(reqs, dtype=torch.int32, device=device)
    table = torch.zeros((reqs, width), dtype=torch.int32, device=device)
    spec = FullAttentionSpec(
        block_size=16, num_kv_heads=KV_HEADS, head_size=HEAD, dtype=query.dtype
    )
    with set_current_vllm_config(config):
        builder = fork.FlashAttentionMetadataBuilder(spec, ["layer"], config, device)
        builder.forest.full_cuda_graph = True
        builder.forest.static = StaticPlanBuffers(64)
        impl = fork.FlashAttentionImpl(HEADS, HEAD, HEAD**-0.5, KV_HEADS, None, None, "auto")
    scales = layer.ScaleLayer(device)

    def load(batch):
        n = len(batch.seq_lens)
        kv.zero_()
        kv.narrow(axis, 0, batch.kv_cache.shape[axis]).copy_(batch.kv_cache)
        query.normal_()
        query[:n].copy_(batch.query)
        host_qsl = torch.full((reqs + 1,), n, dtype=torch.int32)
        host_qsl[: n + 1] = torch.from_numpy(batch.qsl)
        host_lens = torch.zeros(reqs, dtype=torch.int32)
        host_lens[:n] = torch.from_numpy(batch.seq_lens.astype(np.int32))
        qsl.copy_(host_qsl)
        seq_lens.copy_(host_lens)
        table.zero_()
        table[:n, : batch.table.shape[1]].copy_(torch.from_numpy(batch.table))
        common = batch.common.replace(
            query_start_loc=qsl,
            query_start_loc_cpu=host_qsl,
            seq_lens=seq_lens,
            seq_lens_cpu_upper_bound=host_lens,
            num_reqs=reqs,
            num_actual_tokens=reqs,
            max_seq_len=8192,
            block_table_tensor=table,
            slot_mapping=torch.full((reqs,), -1, dtype=torch.int64, device=device),
        )
        with set_current_vllm_config(config):
            meta = builder.build(0, common)
        assert meta.forest is not None and meta.forest.static
        return meta

    def step(meta):
        impl.forward(scales, query, query[:, :KV_HEADS], query[:, :KV_HEADS], kv, meta, out)

    meta = load(first)
    assert meta.forest.num_groups == 2
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step(meta)  # warm-up outside the capture, as vLLM does
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(meta)

    meta = load(second)
    assert meta.forest.num_groups == 3
    graph.replay()
    torch.cuda.synchronize()
    replayed = out[:40].clone()
    step(meta)
    torch.cuda.synchronize()
    eager = out[:40].clone()
    print(f"max |replay - eager| = {(replayed.float() - eager.float()).abs().max().item():.3e}")
    assert torch.equal(replayed, eager)
    flash, _ = layer.run_layer(upstream, _config(), second, **shape)
    ref = layer.float32_reference(second, head=HEAD)
    flash_err = (flash.float() - ref).abs().max().item()
    replay_err = (replayed.float() - ref).abs().max().item()
    print(f"max |flash - fp32| = {flash_err:.3e}, max |replayed forest - fp32| = {replay_err:.3e}")
    assert replay_err <= flash_err
