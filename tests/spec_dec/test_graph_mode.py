"""Full CUDA graphs by default for arctic and suffix engines, on vLLM 0.26.0's real configs.

A CPU ``VllmConfig`` resolves every graph mode to NONE (the CPU platform has no CUDA
graphs), so the tests record the mode the patch hands to vLLM's own ``__post_init__``:
what a GPU engine's resolution (``resolve_cudagraph_mode_and_sizes``) then starts from.
"""

from __future__ import annotations

import pytest

from tests.spec_dec.test_spec_config import (  # noqa: F401  (fixtures)
    arctic_config,
    build,
    mlp,
    target,
    target_config,
)

pytestmark = pytest.mark.usefixtures("registered")


@pytest.fixture
def handed_on(arctic_config, monkeypatch):  # noqa: F811
    """Apply the patch; record the ``cudagraph_mode`` each VllmConfig reaches vLLM with."""
    from arctic_inference.vllm.spec_dec.graph_mode import VllmConfigSpecGraphsPatch

    VllmConfigSpecGraphsPatch.apply()
    seen: list = []
    original = VllmConfigSpecGraphsPatch._orig___post_init__

    def record(self):
        seen.append(self.compilation_config.cudagraph_mode)
        return original(self)

    monkeypatch.setattr(VllmConfigSpecGraphsPatch, "_orig___post_init__", record)
    return seen


def engine_config(target_config, spec=None, arctic=None, **kw):  # noqa: F811
    from vllm.config import DeviceConfig, VllmConfig

    return VllmConfig(
        model_config=target_config,
        speculative_config=spec,
        device_config=DeviceConfig(device="cpu"),
        additional_config={"arctic": arctic} if arctic else {},
        **kw,
    )


def suffix(target_config, **kw):  # noqa: F811
    return build(target_config, method="suffix", num_speculative_tokens=4, **kw)


def test_arctic_suffix_and_hybrid_engines_get_full_graphs(handed_on, target_config, mlp):  # noqa: F811
    from vllm.config import CUDAGraphMode

    specs = [
        build(target_config, method="arctic", model=str(mlp)),
        build(target_config, method="arctic", model=str(mlp), enable_suffix_decoding=True),
        suffix(target_config),
        suffix(target_config, disable_by_batch_size=32),
    ]
    for spec in specs:
        engine_config(target_config, spec)
    assert handed_on == [CUDAGraphMode.FULL] * 4


def test_other_engines_reach_vllm_as_the_user_built_them(handed_on, target_config):  # noqa: F811
    from vllm.config import CompilationConfig, CUDAGraphMode

    engine_config(target_config)  # no speculation
    engine_config(target_config, build(target_config, method="ngram", num_speculative_tokens=2))
    # An explicit mode wins, vLLM's default included (the user's way back to it).
    engine_config(
        target_config,
        suffix(target_config),
        compilation_config=CompilationConfig(cudagraph_mode="FULL_AND_PIECEWISE"),
    )
    assert handed_on == [None, None, CUDAGraphMode.FULL_AND_PIECEWISE]


@pytest.mark.parametrize(
    "case, needle",
    [
        ("user-mode", "set by the user"),
        ("level-O1", "optimisation level"),
        ("eager", "enforce_eager"),
        ("cascade", "cascade attention"),
        ("forest", "Forest Cascade Attention"),
        ("sp", "sequence parallelism"),
        ("ngram", "'ngram' is not one of"),
        ("none", "None is not one of"),
    ],
)
def test_each_feature_that_needs_other_graphs_keeps_vllms_mode(target, case, needle):  # noqa: F811
    """The decision on real configs, one blocker at a time; the rest as for a plain engine."""
    import dataclasses

    from vllm.config import CompilationConfig, ModelConfig, ParallelConfig, SpeculativeConfig
    from vllm.config.vllm import OptimizationLevel

    from arctic_inference.vllm.spec_dec.graph_mode import full_graphs_blocker

    def model_config(eager: bool = False, cascade: bool = False) -> ModelConfig:
        return ModelConfig(
            model=str(target),
            skip_tokenizer_init=True,
            max_model_len=256,
            enforce_eager=eager,
            disable_cascade_attn=not cascade,
        )

    model = model_config(eager=case == "eager", cascade=case == "cascade")
    method = {"ngram": "ngram", "none": None}.get(case, "suffix")
    spec = (
        None
        if method is None
        else SpeculativeConfig(
            method=method,
            num_speculative_tokens=2,
            target_model_config=model,
            target_parallel_config=ParallelConfig(),
        )
    )
    arctic = {
        "forest": {"forest_cascade_attn_configs": "{}"},
        "sp": {"ulysses_sequence_parallel_size": 2},
    }.get(case, {})

    @dataclasses.dataclass
    class Unresolved:
        """The fields the decision reads, as they stand before vLLM's post-init."""

        model_config: ModelConfig
        speculative_config: SpeculativeConfig | None
        compilation_config: CompilationConfig
        additional_config: dict
        optimization_level: OptimizationLevel = OptimizationLevel.O2

    mode = "PIECEWISE" if case == "user-mode" else None
    cfg = Unresolved(
        model, spec, CompilationConfig(cudagraph_mode=mode), {"arctic": arctic} if arctic else {}
    )
    if case == "level-O1":
        cfg.optimization_level = OptimizationLevel.O1
    reason = full_graphs_blocker(cfg)
    assert reason is not None and needle in reason, reason
    # The same config with that one blocker removed gets full graphs.
    plain = Unresolved(
        model_config(),
        SpeculativeConfig(
            method="suffix",
            num_speculative_tokens=2,
            target_model_config=model,
            target_parallel_config=ParallelConfig(),
        ),
        CompilationConfig(),
        {},
    )
    assert full_graphs_blocker(plain) is None


def test_the_patch_is_an_engine_feature():
    from arctic_inference.vllm.patch_set import ENGINE_FEATURES

    (feature,) = [f for f in ENGINE_FEATURES if f.name == "spec-decode-full-graphs"]
    assert feature.patches == (
        "arctic_inference.vllm.spec_dec.graph_mode:VllmConfigSpecGraphsPatch",
    )
    names = [f.name for f in ENGINE_FEATURES]
    # After the config patch that makes "arctic" a method the graph patch reads.
    assert names.index("arctic-speculative-config") < names.index("spec-decode-full-graphs")
