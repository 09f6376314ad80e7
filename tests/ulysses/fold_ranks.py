"""What each gloo rank runs in the folded-layout test (spawned processes): vLLM's real
distributed set-up with the SP groups, real vLLM TP layers loaded through their own
weight loaders from one full weight, then forwards in SP -> FOLDED -> SP -> ... steps."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

# The sequence of step layouts each rank runs, the same for every case.
MODES = ("sp", "folded", "sp", "folded", "sp")


class CausalAttention(torch.nn.Module):
    """Stands in for vLLM's ``Attention`` (which needs a GPU backend and a KV cache):
    plain causal grouped-query attention over ``(T, heads * D)`` inputs, head counts
    read from the widths, so it runs whatever heads the layout gives it."""

    def __init__(self, num_heads: int, head_size: int, scale: float, *a: Any, **k: Any) -> None:
        super().__init__()
        self.head_size = head_size
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        tokens, d = q.shape[0], self.head_size
        q, k, v = (x.reshape(tokens, -1, d) for x in (q, k, v))
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = torch.einsum("thd,shd->hts", q, k) * self.scale
        mask = torch.ones(tokens, tokens, dtype=torch.bool).tril()
        weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return torch.einsum("hts,shd->thd", weights, v).reshape(tokens, -1)


class Owner(torch.nn.Module):
    """Holds a bare QKV layer the way a model's attention module does."""

    def __init__(self, qkv: torch.nn.Module) -> None:
        super().__init__()
        self.qkv_proj = qkv
        self.q_size = qkv.num_heads * qkv.head_size
        self.kv_size = qkv.num_kv_heads * qkv.head_size


def _load(param: torch.nn.Parameter, full: torch.Tensor, shard: Any = None) -> None:
    if shard is None:
        param.weight_loader(param, full)
    else:
        param.weight_loader(param, full, shard)


def _storages(tensors: list[torch.Tensor]) -> list[int]:
    return sorted({t.untyped_storage().data_ptr() for t in tensors})


def _weights_in_use(model: torch.nn.Module) -> list[torch.Tensor]:
    """Every weight a forward reads now: parameters and piecewise-method views."""
    from arctic_inference.vllm.ulysses.folded_layers import PiecewiseLinearMethod

    found = [p for p in model.parameters()]
    for module in model.modules():
        method = module.__dict__.get("quant_method")
        if isinstance(method, PiecewiseLinearMethod):
            found.extend(method.weights)
            found.extend(b for b in method.biases if b is not None)
    return found


# CUDA-graph sizes the capture test asks vLLM for (threshold 4: 1, 2 FOLDED; 5 and 8
# SP, and 5 does not split over SP 2), and the steps it then runs.
GRAPH_SIZES = [1, 2, 5, 8]
GRAPH_STEPS = (1, 3, 2, 6, 8, 9, 4)


def _layout_seen(model: torch.nn.Module) -> dict[str, Any]:
    """What a layer of ``model`` sees now: vLLM's TP group and one folded weight."""
    from vllm.distributed import parallel_state

    from arctic_inference.vllm.ulysses import groups

    mode = groups.current_mode()
    return {
        "mode": None if mode is None else mode.value,
        "tp_size": parallel_state.get_tp_group().world_size,
        "column_rows": model.column.weight.shape[0],
        "merged_method": type(model.merged.quant_method).__name__,
    }


def _graph_config(config: Any) -> Any:
    """``config`` as a CUDA platform leaves it for full graphs of the eager model:
    the CPU platform turns graphs off, so the settled values are written back."""
    import copy

    from vllm.config import CUDAGraphMode

    graphs = copy.copy(config)
    graphs.compilation_config = copy.deepcopy(config.compilation_config)
    graphs.parallel_config = copy.copy(config.parallel_config)
    graphs.model_config = copy.copy(config.model_config)
    graphs.model_config.enforce_eager = False
    compilation = graphs.compilation_config
    compilation.cudagraph_mode = CUDAGraphMode.FULL
    compilation.cudagraph_capture_sizes = list(GRAPH_SIZES)
    compilation.max_cudagraph_capture_size = GRAPH_SIZES[-1]
    compilation.cudagraph_num_of_warmups = 1
    return graphs


def _runner_steps(config: Any, model: torch.nn.Module) -> dict[str, Any]:
    """vLLM's real capture loop and batch dispatch under the patched runner.

    The engine-side patch fits the capture sizes; vLLM's own ``CudagraphDispatcher``
    makes the keys, vLLM's ``_capture_cudagraphs`` / ``_warmup_and_capture`` drive the
    patched ``_dummy_run`` for each, and vLLM's ``_determine_batch_execution_and_padding``
    pads every batch, at capture and in the steps after it. Only the bodies of
    ``_dummy_run`` and ``execute_model`` (which need a GPU, a KV cache and inputs) are
    stood in for: each dispatches its batch as vLLM's does, then records the layout
    a layer of ``model`` sees, i.e. what a graph captured or replayed there holds.
    """

    import numpy as np
    from vllm.config import CUDAGraphMode
    from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    from arctic_inference.vllm.ulysses.engine_patches import prepare_engine_config
    from arctic_inference.vllm.ulysses.worker_patches import ModelRunnerSPPatch

    ModelRunnerSPPatch.apply()
    graphs = _graph_config(config)
    prepare_engine_config(graphs)  # what the engine does before any worker starts
    captured: list[dict] = []
    steps: list[dict] = []

    def load(runner: Any, load_dummy_weights: bool = False) -> None:
        runner.model = model

    def dummy_run(
        runner: Any,
        num_tokens: int,
        cudagraph_runtime_mode: Any = None,
        force_attention: bool = False,
        uniform_decode: bool = False,
        allow_microbatching: bool = True,
        skip_eplb: bool = False,
        is_profile: bool = False,
        create_mixed_batch: bool = False,
        remove_lora: bool = True,
        is_graph_capturing: bool = False,
        num_active_loras: int = 0,
        profile_seq_lens: int | None = None,
    ) -> None:
        num_reqs = min(num_tokens, runner.scheduler_config.max_num_seqs)
        per_req = [num_tokens // num_reqs] * num_reqs
        per_req[-1] += num_tokens % num_reqs
        mode, desc, *_ = runner._determine_batch_execution_and_padding(
            num_tokens=num_tokens,
            num_reqs=num_reqs,
            num_scheduled_tokens_np=np.array(per_req, dtype=np.int32),
            max_num_scheduled_tokens=1 if uniform_decode else num_tokens,
            use_cascade_attn=False,
            allow_microbatching=allow_microbatching,
            force_eager=is_profile or cudagraph_runtime_mode == CUDAGraphMode.NONE,
            force_uniform_decode=uniform_decode,
            force_has_lora=num_active_loras > 0,
            force_num_active_loras=num_active_loras,
        )
        captured.append(
            {
                "tokens": desc.num_tokens,
                "graph": mode.name,
                "capturing": is_graph_capturing,
                "scope_capturing": runner._arctic_layouts.capturing,
                **_layout_seen(model),
            }
        )

    def execute(runner: Any, scheduler_output: Any, intermediate_tensors: Any = None) -> None:
        per_req = np.array(list(scheduler_output.num_scheduled_tokens.values()), dtype=np.int32)
        mode, desc, *_ = runner._determine_batch_execution_and_padding(
            num_tokens=scheduler_output.total_num_scheduled_tokens,
            num_reqs=len(per_req),
            num_scheduled_tokens_np=per_req,
            max_num_scheduled_tokens=int(per_req.max()),
            use_cascade_attn=False,
            num_encoder_reqs=0,
        )
        # vLLM computes the logits after the forward, still inside execute_model
        steps.append(
            {
                "scheduled": scheduler_output.total_num_scheduled_tokens,
                "tokens": desc.num_tokens,
                "graph": mode.name,
                **_layout_seen(model),
            }
        )

    ModelRunnerSPPatch._orig_load_model = load
    ModelRunnerSPPatch._orig__dummy_run = dummy_run
    ModelRunnerSPPatch._orig_execute_model = execute
    runner = GPUModelRunner.__new__(GPUModelRunner)  # vLLM's methods on a runner without a GPU
    runner.vllm_config = graphs
    runner.model_config = graphs.model_config
    runner.compilation_config = graphs.compilation_config
    runner.parallel_config = graphs.parallel_config
    runner.scheduler_config = graphs.scheduler_config
    runner.load_config = graphs.load_config
    runner.lora_config = None
    runner.uniform_decode_query_len = 1
    runner.input_batch = SimpleNamespace(lora_id_to_lora_request={})
    runner.cudagraph_dispatcher = CudagraphDispatcher(graphs)
    runner.cudagraph_dispatcher.initialize_cudagraph_keys(CUDAGraphMode.FULL, 1)
    runner.load_model()
    before = _layout_seen(model)
    sync, torch.accelerator.synchronize = torch.accelerator.synchronize, lambda *a: None
    try:  # vLLM's capture loop, minus the device sync a CPU cannot do
        for mode, descs in runner.cudagraph_dispatcher.get_capture_descs():
            runner._capture_cudagraphs(descs, cudagraph_runtime_mode=mode)
    finally:
        torch.accelerator.synchronize = sync
    for tokens in GRAPH_STEPS:  # one request each; then a decode step of two requests
        runner.execute_model(
            SimpleNamespace(total_num_scheduled_tokens=tokens, num_scheduled_tokens={"r": tokens})
        )
    runner.execute_model(
        SimpleNamespace(total_num_scheduled_tokens=2, num_scheduled_tokens=dict.fromkeys("ab", 1))
    )
    return {
        "sizes": graphs.compilation_config.cudagraph_capture_sizes,
        "max_size": graphs.compilation_config.max_cudagraph_capture_size,
        "before": before,
        "captured": captured,
        "steps": steps,
        "after": _layout_seen(model),
    }


def _whole_model(config: Any, position: Any, case: dict) -> dict[str, Any]:
    """vLLM's own ``LlamaForCausalLM`` (attention stood in for), loaded through its
    ``load_weights`` from full Hugging Face weights, run in both layouts."""
    from vllm.model_executor.models import llama

    from arctic_inference.vllm.ulysses import groups
    from arctic_inference.vllm.ulysses.folded_model import FoldedModel
    from arctic_inference.vllm.ulysses.shift import StepMode

    model = llama.LlamaForCausalLM(vllm_config=config)
    model.logits_processor.head_dtype = None  # float64 throughout
    model.load_weights(case["hf_weights"].items())
    folded = FoldedModel(model, position)
    out: dict[str, Any] = {"modules": [layer.name for layer in folded.layers]}
    for name, mode in (("sp", StepMode.SP), ("folded", StepMode.FOLDED)):
        with groups.step(mode), folded.step(mode), torch.inference_mode():
            hidden = model(case["ids"], case["positions"])
            out[name] = model.compute_logits(hidden)
    return out


class Sharded(torch.nn.Module):
    """A tensor-parallel module of a kind the folding does not know."""

    def __init__(self) -> None:
        super().__init__()
        self.tp_size = 2


def _refusals(position: Any, hidden: int) -> dict[str, str]:
    """The messages of models the folding must refuse (built on the real layers)."""
    from vllm.model_executor.layers import linear
    from vllm.model_executor.layers.vocab_parallel_embedding import VocabParallelEmbedding

    from arctic_inference.vllm.ulysses.folded_layers import FoldError
    from arctic_inference.vllm.ulysses.folded_model import FoldedModel

    def message(model: torch.nn.Module) -> str:
        try:
            FoldedModel(model, position)
        except FoldError as err:
            return str(err)
        return "folded"

    bare = torch.nn.Module()
    bare.qkv_proj = linear.QKVParallelLinear(hidden, 8, 8, 4)  # no q_size/kv_size kept
    unknown = torch.nn.Module()
    unknown.experts = Sharded()
    unknown.ok = linear.RowParallelLinear(hidden, hidden)
    extra_vocab = torch.nn.Module()
    extra_vocab.embed = VocabParallelEmbedding(110, hidden, org_num_embeddings=100)
    quantized = torch.nn.Module()
    quantized.proj = linear.ColumnParallelLinear(hidden, hidden)
    quantized.proj.quant_method = type("Fp8LinearMethod", (), {})()
    return {
        "bare_qkv": message(bare),
        "unknown": message(unknown),
        "extra_vocab": message(extra_vocab),
        "quantized": message(quantized),
    }


def run_rank(rank: int, world: int, sp: int, port: int, folder: str, model_dir: str) -> None:
    os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "0"
    torch.set_default_dtype(torch.float64)
    from vllm.config import (
        CompilationConfig,
        DeviceConfig,
        ModelConfig,
        VllmConfig,
        set_current_vllm_config,
    )
    from vllm.distributed import parallel_state
    from vllm.model_executor.layers import linear
    from vllm.model_executor.layers.logits_processor import LogitsProcessor
    from vllm.model_executor.layers.vocab_parallel_embedding import (
        ParallelLMHead,
        VocabParallelEmbedding,
    )
    from vllm.model_executor.models import llama

    from arctic_inference.vllm.ulysses import groups
    from arctic_inference.vllm.ulysses.folded_model import FoldedModel, position_of
    from arctic_inference.vllm.ulysses.shift import StepMode
    from arctic_inference.vllm.ulysses.worker_patches import ParallelStateSPPatch

    ParallelStateSPPatch.apply()
    llama.Attention = CausalAttention  # the one stand-in: see CausalAttention
    tp = world // sp
    case = torch.load(Path(folder) / "case.pt")
    w = case["weights"]
    config = VllmConfig(
        model_config=ModelConfig(model=model_dir, skip_tokenizer_init=True, enforce_eager=True),
        device_config=DeviceConfig(device="cpu"),
        compilation_config=CompilationConfig(custom_ops=["none"]),
        additional_config={
            "arctic": {
                "ulysses_sequence_parallel_size": sp,
                "enable_shift_parallel": True,
                "shift_parallel_threshold": 4,
            }
        },
    )
    with set_current_vllm_config(config):
        parallel_state.init_distributed_environment(
            world_size=world,
            rank=rank,
            local_rank=rank,
            distributed_init_method=f"tcp://127.0.0.1:{port}",
            backend="gloo",
        )
        parallel_state.ensure_model_parallel_initialized(tp, 1, backend="gloo")
        built = groups.current()
        hidden, inter = case["hidden"], case["inter"]
        model = torch.nn.Module()
        model.column = linear.ColumnParallelLinear(hidden, inter, bias=True)
        model.row = linear.RowParallelLinear(inter, hidden, bias=True)
        model.merged = linear.MergedColumnParallelLinear(hidden, [inter, inter], bias=True)
        model.qkv = torch.nn.ModuleList()
        for spec in case["qkv"]:
            layer = linear.QKVParallelLinear(
                hidden, spec["head_size"], spec["heads"], spec["kv_heads"], bias=True
            )
            for name in ("q", "k", "v"):
                _load(layer.weight, spec[name], name)
                _load(layer.bias, spec[f"b{name}"], name)
            model.qkv.append(Owner(layer))
        model.embed = VocabParallelEmbedding(case["vocab"], hidden)
        model.lm_head = ParallelLMHead(case["vocab"], hidden)
        model.mlp = llama.LlamaMLP(hidden, inter, "silu", prefix="mlp")
        model.attn = llama.LlamaAttention(
            config.model_config.hf_config,
            hidden,
            case["attn_heads"],
            case["attn_kv_heads"],
            max_position_embeddings=1024,
            prefix="layers.0.self_attn",
        )
        model.logits = LogitsProcessor(case["vocab"])
        model.logits.head_dtype = None  # project in the inputs' float64, not the config's bf16
        _load(model.column.weight, w["column"])
        _load(model.column.bias, w["column_b"])
        _load(model.row.weight, w["row"])
        _load(model.row.bias, w["row_b"])
        for i, part in enumerate(("gate", "up")):
            _load(model.merged.weight, w[part], i)
            _load(model.merged.bias, w[f"{part}_b"], i)
        _load(model.embed.weight, w["embed"])
        _load(model.lm_head.weight, w["lm_head"])
        for i, part in enumerate(("mlp_gate", "mlp_up")):
            _load(model.mlp.gate_up_proj.weight, w[part], i)
        _load(model.mlp.down_proj.weight, w["mlp_down"])
        for name in ("q", "k", "v"):
            _load(model.attn.qkv_proj.weight, w[f"attn_{name}"], name)
        _load(model.attn.o_proj.weight, w["attn_o"])

        position = position_of(built)
        folded = FoldedModel(model, position)
        loaded_storages = _storages(_weights_in_use(model))
        x, ids, positions = case["x"], case["ids"], case["positions"]
        steps = []
        for name in MODES:
            mode = StepMode.SP if name == "sp" else StepMode.FOLDED
            ranks, index = (
                (tp, position.tp_rank) if name == "sp" else (sp * tp, position.folded_rank)
            )
            with groups.step(mode), folded.step(mode), torch.inference_mode():
                out = {
                    "column": model.column(x)[0],
                    "row": model.row(case["row_in"].chunk(ranks, dim=-1)[index])[0],
                    "merged": model.merged(x)[0],
                    "qkv": [owner.qkv_proj(x)[0] for owner in model.qkv],
                    "embed": model.embed(ids),
                    "logits": model.logits(model.lm_head, x),
                    "mlp": model.mlp(x),
                    "attn": model.attn(positions, x),
                    "tp_size": parallel_state.get_tp_group().world_size,
                    "storages": _storages(_weights_in_use(model)),
                }
            steps.append(out)
        steps_end_weight_is_loaded = model.column._parameters["weight"] is folded.layers[0].source
        # A reload that makes a new weight tensor, and one that writes in place.
        model.column.weight = torch.nn.Parameter(model.column.weight.detach() * 2)
        with torch.inference_mode():
            model.row.weight.mul_(3)
        index = position.folded_rank
        with groups.step(StepMode.FOLDED), folded.step(StepMode.FOLDED), torch.inference_mode():
            reloaded = {
                "column": model.column(x)[0],
                "row": model.row(case["row_in"].chunk(sp * tp, dim=-1)[index])[0],
            }
        result = {
            "reloaded": reloaded,
            "steps": steps,
            "loaded_storages": loaded_storages,
            "tp_rank": position.tp_rank,
            "sp_rank": position.sp_rank,
            "folded_rank": built.folded.rank_in_group,
            "after_tp_size": parallel_state.get_tp_group().world_size,
            "weight_after_is_loaded": steps_end_weight_is_loaded,
            "lm_head_folded": any(layer.module is model.lm_head for layer in folded.layers),
            "gathers_in_order": position.gathers_in_order,
        }
        result["runner_steps"] = _runner_steps(config, model)
        result["refusals"] = _refusals(position, hidden)
        result["whole_model"] = _whole_model(config, position, case)
    torch.save(result, Path(folder) / f"rank{rank}.pt")
    parallel_state.destroy_model_parallel()
    parallel_state.destroy_distributed_environment()
