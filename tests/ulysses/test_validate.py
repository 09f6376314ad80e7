"""Config validation on real vLLM 0.26.0 configs: each refusal names the setting and
the fix; a valid config yields the layout it will run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.vllm

from arctic_inference.vllm.ulysses.layout import ParallelLayout  # noqa: E402
from arctic_inference.vllm.ulysses.validate import (  # noqa: E402
    SequenceParallelConfigError,
    check_config,
)

Build = Callable[..., Any]


def refusal(config: Any) -> str:
    with pytest.raises(SequenceParallelConfigError) as info:
        check_config(config)
    return str(info.value)


def test_sp_off_is_no_plan(build_config: Build) -> None:
    assert check_config(build_config()) is None


def test_valid_sp_config_gives_its_layout_and_heads(build_config: Build) -> None:
    config = build_config(
        arctic={"ulysses_sequence_parallel_size": 2, "shift_parallel_threshold": 64},
        tensor_parallel_size=2,
    )
    plan = check_config(config)
    assert plan is not None
    assert plan.layout == ParallelLayout(dp=1, pp=1, sp=2, tp=2)
    assert (plan.heads.heads_per_rank, plan.heads.kv_heads_per_rank) == (2, 1)
    assert not plan.shift.enabled and plan.shift.threshold == 64


def test_shift_with_sp_runs(build_config: Build) -> None:
    config = build_config(
        arctic={
            "ulysses_sequence_parallel_size": 2,
            "enable_shift_parallel": True,
            "shift_parallel_threshold": 128,
        },
        tensor_parallel_size=2,
    )
    plan = check_config(config)
    assert plan is not None
    assert plan.shift.enabled and plan.shift.threshold == 128
    assert plan.layout.folded_tp == 4


def test_shift_with_kv_heads_replicated_over_the_folded_ranks_runs(build_config: Build) -> None:
    # 2 KV heads over SP 2 x TP 2: each KV head on two folded ranks, a whole-head view.
    config = build_config(
        kv_heads=2,
        arctic={"ulysses_sequence_parallel_size": 2, "enable_shift_parallel": True},
        tensor_parallel_size=2,
    )
    plan = check_config(config)
    assert plan is not None and plan.heads.kv_sp_replicas == 2


# --- CUDA graphs: full graphs of the eager model, nothing compiled ----------------

GRAPHS = {"mode": "NONE", "cudagraph_mode": "FULL"}


@pytest.mark.parametrize("cudagraph_mode", ["FULL", "FULL_DECODE_ONLY"])
@pytest.mark.parametrize("shift", [False, True])
def test_full_graphs_without_torch_compile_run(
    build_config: Build, cudagraph_mode: str, shift: bool
) -> None:
    config = build_config(
        arctic={"ulysses_sequence_parallel_size": 2, "enable_shift_parallel": shift},
        enforce_eager=False,
        compilation={"mode": "NONE", "cudagraph_mode": cudagraph_mode},
    )
    plan = check_config(config)
    assert plan is not None and plan.shift.enabled is shift


def test_optimization_level_zero_needs_no_enforce_eager(build_config: Build) -> None:
    # -O0 means no torch.compile (and, by its defaults, no graphs): nothing to refuse.
    config = build_config(arctic={"ulysses_sequence_parallel_size": 2}, enforce_eager=False)
    config.compilation_config.mode = None  # as it is before vLLM settles it
    config.optimization_level = 0
    assert check_config(config) is not None
    config.optimization_level = 2
    assert "compilation mode VLLM_COMPILE" in refusal(config)


def test_torch_compile_disabled_by_the_environment_runs(
    build_config: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = build_config(arctic={"ulysses_sequence_parallel_size": 2}, enforce_eager=False)
    config.compilation_config.mode = None
    assert "compilation mode VLLM_COMPILE" in refusal(config)
    monkeypatch.setenv("TORCH_COMPILE_DISABLE", "1")
    assert check_config(config) is not None


def test_shift_under_torch_compile_names_both_reasons_and_both_fixes(build_config: Build) -> None:
    config = build_config(
        arctic={"ulysses_sequence_parallel_size": 2, "enable_shift_parallel": True},
        enforce_eager=False,
    )
    message = refusal(config)
    assert "--ulysses-sequence-parallel-size=2 does not run under torch.compile" in message
    assert "compilation mode VLLM_COMPILE" in message
    assert "per-step weight layouts of shift parallelism" in message
    assert """--compilation-config '{"mode": "NONE", "cudagraph_mode": "FULL"}'""" in message
    assert message.endswith("or add --enforce-eager.")


@pytest.mark.parametrize("mode", ["STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE", "VLLM_COMPILE"])
def test_every_torch_compile_mode_is_refused(build_config: Build, mode: str) -> None:
    config = build_config(
        arctic={"ulysses_sequence_parallel_size": 2},
        enforce_eager=False,
        compilation={"mode": mode, "cudagraph_mode": "FULL"},
    )
    message = refusal(config)
    assert f"(compilation mode {mode})" in message
    assert "shift parallelism" not in message  # SP alone: only the all-to-alls


def test_breakable_graphs_are_refused(build_config: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    config = build_config(
        arctic={"ulysses_sequence_parallel_size": 2}, enforce_eager=False, compilation=GRAPHS
    )
    monkeypatch.setenv("VLLM_USE_BREAKABLE_CUDAGRAPH", "1")
    message = refusal(config)
    assert "breakable CUDA graphs" in message and "VLLM_USE_BREAKABLE_CUDAGRAPH=0" in message


def test_micro_batching_is_refused(build_config: Build) -> None:
    config = build_config(
        arctic={"ulysses_sequence_parallel_size": 2}, enforce_eager=False, compilation=GRAPHS
    )
    config.parallel_config.enable_dbo = True
    assert "micro-batching with CUDA graphs (--enable-dbo" in refusal(config)


def test_eager_ignores_the_compilation_settings(build_config: Build) -> None:
    # --enforce-eager turns torch.compile and graphs off whatever else is asked.
    config = build_config(arctic={"ulysses_sequence_parallel_size": 2})
    config.compilation_config.mode = 3
    assert check_config(config) is not None


def test_shift_with_a_quantized_model_is_refused(build_config: Build) -> None:
    config = build_config(
        arctic={"ulysses_sequence_parallel_size": 2, "enable_shift_parallel": True}
    )
    config.model_config.quantization = "fp8"
    message = refusal(config)
    assert "--enable-shift-parallel cannot run a quantized model (quantization='fp8')" in message
    assert "drop --enable-shift-parallel" in message
    config.model_config.quantization = None
    assert check_config(config) is not None  # the refusal came from the quantization alone


def test_shift_without_sp_is_refused(build_config: Build) -> None:
    message = refusal(build_config(arctic={"enable_shift_parallel": True}))
    assert "--enable-shift-parallel needs --ulysses-sequence-parallel-size of 2" in message
    assert "drop --enable-shift-parallel" in message


def test_sp_with_pipeline_parallelism_is_refused(build_config: Build) -> None:
    config = build_config(arctic={"ulysses_sequence_parallel_size": 2}, pipeline_parallel_size=2)
    message = refusal(config)
    assert "pipeline_parallel_size=2 is not supported" in message
    assert "--pipeline-parallel-size 1" in message


def test_sp_with_the_v2_runner_is_refused(
    build_config: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = build_config(arctic={"ulysses_sequence_parallel_size": 2})
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "1")
    assert config.use_v2_model_runner  # the real property sees the variable
    message = refusal(config)
    assert "V2 runner" in message and "VLLM_USE_V2_MODEL_RUNNER" in message


def test_attention_heads_that_do_not_divide_are_refused(build_config: Build) -> None:
    # 8 query heads over SP 4 x TP 1 is fine; SP 16 is not.
    assert check_config(build_config(arctic={"ulysses_sequence_parallel_size": 4})) is not None
    message = refusal(build_config(arctic={"ulysses_sequence_parallel_size": 16}))
    assert "--ulysses-sequence-parallel-size=16 cannot run this model" in message
    assert "8 attention heads, which do not divide by" in message
    assert "= 16" in message


def test_kv_heads_that_neither_divide_nor_replicate_are_refused(build_config: Build) -> None:
    # 6 query heads divide by SP 2 x TP 1, but 3 KV heads neither split nor replicate.
    message = refusal(
        build_config(heads=6, kv_heads=3, arctic={"ulysses_sequence_parallel_size": 2})
    )
    assert "3 KV heads, which neither divide by" in message
    assert "ulysses_sequence_parallel_size=2 x tensor_parallel_size=1 = 2" in message


def test_kv_heads_fewer_than_ranks_are_replicated_not_refused(build_config: Build) -> None:
    config = build_config(kv_heads=2, arctic={"ulysses_sequence_parallel_size": 4})
    plan = check_config(config)
    assert plan is not None
    assert (plan.heads.kv_heads_per_rank, plan.heads.kv_sp_replicas) == (1, 2)


def test_bad_sp_value_is_refused_with_the_valid_range(build_config: Build) -> None:
    with pytest.raises(ValueError, match=r"ulysses_sequence_parallel_size.*>= 1"):
        check_config(build_config(arctic={"ulysses_sequence_parallel_size": 0}))


@pytest.mark.parametrize("shift", [False, True])
def test_the_sp_bench_asks_for_graphs_the_plugin_accepts(build_config: Build, shift: bool) -> None:
    """``bench/sp`` must measure SP and shift with CUDA graphs, in a setting the plugin runs
    (a bench config the validation refuses would answer "refused" instead of a number)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "sp"))
    import sp_engine

    kwargs = sp_engine.graph_kwargs(sp=2, eager=False)
    assert "enforce_eager" not in kwargs
    assert kwargs["compilation_config"]["cudagraph_mode"].startswith("FULL")
    config = build_config(
        arctic={"ulysses_sequence_parallel_size": 2, "enable_shift_parallel": shift},
        enforce_eager=False,
        compilation=kwargs["compilation_config"],
    )
    assert check_config(config) is not None
    assert sp_engine.graph_kwargs(sp=1, eager=False) == {}  # TP baseline: vLLM's default
    assert sp_engine.graph_kwargs(sp=2, eager=True) == {"enforce_eager": True}


def test_forest_attention_with_sp_is_refused_naming_both_flags(build_config: Build) -> None:
    # Both features replace the step's graph-mode decision; the later-applied patch would
    # silently drop the other's (see tests/plugin/test_patch_overlaps.py).
    message = refusal(
        build_config(
            arctic={"ulysses_sequence_parallel_size": 2, "forest_cascade_attn_configs": "{}"}
        )
    )
    assert "--forest-cascade-attn-configs" in message
    assert "--ulysses-sequence-parallel-size" in message
    # Forest alone (SP 1) is not this check's business.
    assert check_config(build_config(arctic={"forest_cascade_attn_configs": "{}"})) is None
