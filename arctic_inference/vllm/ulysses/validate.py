"""Refuse what sequence or shift parallelism cannot run, before any GPU work.

:func:`check_config` is called on the engine side right after vLLM built the
``VllmConfig`` (:mod:`.patches`), so a bad combination stops ``vllm serve`` or
``LLM(...)`` with one message naming the setting and the fix, instead of a
hang or a shape error inside a worker.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from vllm.config import CompilationMode
from vllm.config.vllm import OptimizationLevel

from arctic_inference.vllm.attention.forest_config import (
    FOREST_CASCADE_ATTN_CONFIGS,
    forest_config_for,
)
from arctic_inference.vllm.runner_choice import V2_RUNNER_ENV
from arctic_inference.vllm.ulysses.heads import HeadSplit, HeadSplitError, check_head_split
from arctic_inference.vllm.ulysses.layout import ParallelLayout
from arctic_inference.vllm.ulysses.sp_args import ShiftSettings, shift_settings, sp_size

SP_FLAG = "--ulysses-sequence-parallel-size"
SHIFT_FLAG = "--enable-shift-parallel"

# The compilation config that captures both layouts in CUDA graphs: full graphs of the
# eager model (benches and GPU tests ask for this one).
SP_GRAPH_COMPILATION = {"mode": "NONE", "cudagraph_mode": "FULL"}
GRAPH_CONFIG_EXAMPLE = json.dumps(SP_GRAPH_COMPILATION)

# Executors whose worker start-up the patches cover.
SUPPORTED_EXECUTORS = ("mp", "uni", None)


class SequenceParallelConfigError(ValueError):
    """A configuration sequence or shift parallelism cannot run."""


@dataclasses.dataclass(frozen=True)
class SequenceParallelPlan:
    """What a valid SP > 1 config runs: the layout, the head split and shift."""

    layout: ParallelLayout
    heads: HeadSplit
    shift: ShiftSettings


def _model_heads(model_config: Any) -> tuple[int, int]:
    text = model_config.hf_text_config
    return int(text.num_attention_heads), int(model_config.get_total_num_kv_heads())


def _check_shift(vllm_config: Any) -> None:
    """What FOLDED steps cannot run: the folded layout is cut from the target model's
    unquantized dense weights (see ``folded_layers``)."""
    model = vllm_config.model_config
    refusals = []
    if model.quantization is not None:
        refusals.append(
            f"a quantized model (quantization={model.quantization!r}): folded views are "
            "cut from unquantized weights"
        )
    if model.is_moe:
        refusals.append("a mixture-of-experts model: its expert layers have no folded layout")
    if vllm_config.lora_config is not None:
        refusals.append("LoRA: its adapters and extra vocabulary are not folded")
    if vllm_config.speculative_config is not None:
        refusals.append("speculative decoding: only the target model is folded")
    if refusals:
        raise SequenceParallelConfigError(
            f"{SHIFT_FLAG} cannot run " + "; nor ".join(refusals) + f"; drop {SHIFT_FLAG}."
        )


def _compile_mode(vllm_config: Any) -> CompilationMode:
    """The compilation mode vLLM will settle on: the requested one, else its
    optimization level's default (vLLM decides it after first validating)."""
    mode = vllm_config.compilation_config.mode
    if os.environ.get("TORCH_COMPILE_DISABLE") == "1":
        return CompilationMode.NONE
    if mode is not None:
        return CompilationMode(mode)
    if vllm_config.optimization_level == OptimizationLevel.O0:
        return CompilationMode.NONE
    return CompilationMode.VLLM_COMPILE


def _check_graphs(vllm_config: Any, sp: int, shift: ShiftSettings) -> None:
    """Without --enforce-eager, what CUDA graphs of the SP (and FOLDED) layout can be.

    The layouts are captured as full graphs of the eager model (compilation mode
    NONE, cudagraph_mode FULL or FULL_DECODE_ONLY), one layout per padded size.
    torch.compile would trace the all-to-alls and the per-step weight switch into
    one compiled graph, and piecewise graphs need it, so both are refused.
    """
    what = "the all-to-alls" + (
        " and the per-step weight layouts of shift parallelism" if shift.enabled else ""
    )
    fix = (
        "run CUDA graphs without torch.compile: --compilation-config "
        f"'{GRAPH_CONFIG_EXAMPLE}' (or cudagraph_mode FULL_DECODE_ONLY), or add "
        "--enforce-eager."
    )
    mode = _compile_mode(vllm_config)
    if mode != CompilationMode.NONE:
        raise SequenceParallelConfigError(
            f"{SP_FLAG}={sp} does not run under torch.compile (compilation mode "
            f"{mode.name}): {what} are captured in full CUDA graphs of the eager model "
            f"only; {fix}"
        )
    if os.environ.get("VLLM_USE_BREAKABLE_CUDAGRAPH") == "1":
        raise SequenceParallelConfigError(
            f"{SP_FLAG}={sp} does not support vLLM's breakable CUDA graphs "
            f"(VLLM_USE_BREAKABLE_CUDAGRAPH=1); set VLLM_USE_BREAKABLE_CUDAGRAPH=0 and {fix}"
        )
    if vllm_config.parallel_config.use_ubatching:
        raise SequenceParallelConfigError(
            f"{SP_FLAG}={sp} does not support micro-batching with CUDA graphs "
            "(--enable-dbo or ubatch_size > 1): vLLM's micro-batch wrapper captures "
            "and runs parts of a step, not the padded step whose layout each graph is "
            "captured in; drop it."
        )


def check_config(vllm_config: Any) -> SequenceParallelPlan | None:
    """The plan for this config, ``None`` when SP is off, or a clear refusal."""
    sp = sp_size(vllm_config)
    shift = shift_settings(vllm_config)
    if sp == 1:
        if shift.enabled:
            raise SequenceParallelConfigError(
                f"{SHIFT_FLAG} needs {SP_FLAG} of 2 or more (shift parallelism switches "
                "between the SP x TP layout and TP folded from it); set "
                f"{SP_FLAG} 2 or drop {SHIFT_FLAG}."
            )
        return None
    parallel = vllm_config.parallel_config
    if parallel.pipeline_parallel_size > 1:
        raise SequenceParallelConfigError(
            f"{SP_FLAG}={sp} with pipeline_parallel_size="
            f"{parallel.pipeline_parallel_size} is not supported (the sequence split "
            "is not carried across pipeline stages); use --pipeline-parallel-size 1 "
            f"or {SP_FLAG} 1."
        )
    if parallel.prefill_context_parallel_size > 1 or parallel.decode_context_parallel_size > 1:
        raise SequenceParallelConfigError(
            f"{SP_FLAG}={sp} cannot be combined with vLLM's context parallelism "
            f"(prefill_context_parallel_size={parallel.prefill_context_parallel_size}, "
            f"decode_context_parallel_size={parallel.decode_context_parallel_size}); "
            "set both to 1 or use one of the two."
        )
    if parallel.distributed_executor_backend not in SUPPORTED_EXECUTORS:
        raise SequenceParallelConfigError(
            f"{SP_FLAG}={sp} needs vLLM's multiprocessing executor, got "
            f"distributed_executor_backend={parallel.distributed_executor_backend!r}; "
            "use --distributed-executor-backend mp."
        )
    if vllm_config.use_v2_model_runner:
        raise SequenceParallelConfigError(
            f"{SP_FLAG}={sp} patches vLLM's V1 model runner, but this config uses the "
            f"V2 runner; unset {V2_RUNNER_ENV} (or set it to 0)."
        )
    if vllm_config.model_config is None:
        raise SequenceParallelConfigError(f"{SP_FLAG}={sp} needs a model config.")
    if forest_config_for(vllm_config) is not None:
        # Both replace GPUModelRunner._determine_batch_execution_and_padding (each step's
        # CUDA-graph mode), and forest's grouping of the SP layout's heads is untested.
        raise SequenceParallelConfigError(
            f"{SP_FLAG}={sp} cannot run with Forest Cascade Attention yet (both choose each "
            "step's CUDA-graph mode, and forest is not built for the SP head split); drop "
            f"--{FOREST_CASCADE_ATTN_CONFIGS.name.replace('_', '-')} or set {SP_FLAG} 1."
        )
    if not vllm_config.model_config.enforce_eager:
        _check_graphs(vllm_config, sp, shift)
    if shift.enabled:
        _check_shift(vllm_config)
    num_heads, num_kv_heads = _model_heads(vllm_config.model_config)
    try:
        heads = check_head_split(num_heads, num_kv_heads, sp, parallel.tensor_parallel_size)
    except HeadSplitError as err:
        raise SequenceParallelConfigError(f"{SP_FLAG}={sp} cannot run this model: {err}") from None
    layout = ParallelLayout(
        dp=parallel.data_parallel_size,
        pp=parallel.pipeline_parallel_size,
        sp=sp,
        tp=parallel.tensor_parallel_size,
    )
    return SequenceParallelPlan(layout=layout, heads=heads, shift=shift)
