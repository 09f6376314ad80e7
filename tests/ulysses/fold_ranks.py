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


def _runner_steps(config: Any, model: torch.nn.Module) -> list[dict]:
    """The patched ``load_model`` and ``execute_model`` of vLLM's V1 runner, around a
    stand-in for the rest of vLLM's step that records what a layer sees."""
    from vllm.distributed import parallel_state
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    from arctic_inference.vllm.ulysses.worker_patches import ModelRunnerSPPatch

    ModelRunnerSPPatch.apply()
    seen: list[dict] = []

    def load(runner: Any, load_dummy_weights: bool = False) -> None:
        runner.model = model

    def step(runner: Any, scheduler_output: Any, intermediate_tensors: Any = None) -> None:
        seen.append(
            {
                "tokens": scheduler_output.total_num_scheduled_tokens,
                "tp_size": parallel_state.get_tp_group().world_size,
                "column_rows": model.column.weight.shape[0],
                "merged_method": type(model.merged.quant_method).__name__,
            }
        )

    ModelRunnerSPPatch._orig_load_model = load
    ModelRunnerSPPatch._orig_execute_model = step
    runner = GPUModelRunner.__new__(GPUModelRunner)  # only the two patched methods run
    runner.vllm_config = config
    runner.load_model()
    for tokens in (3, 600, 1, 4):  # threshold 4: FOLDED, SP, FOLDED, SP
        runner.execute_model(SimpleNamespace(total_num_scheduled_tokens=tokens))
    seen.append({"after_column_rows": model.column.weight.shape[0]})
    return seen


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
