"""Parsing the public checkpoint config: field names, dims, and the refusals."""

from __future__ import annotations

import pytest

from arctic_inference import envs
from arctic_inference.vllm.spec_dec.config import (
    LEGACY_LSTM_ARCH,
    LSTM_ARCH,
    MLP_ARCH,
    SpeculatorConfigError,
    check_base_model,
    parse_dims,
    parse_speculator_config,
)

# The field names and value forms of the released checkpoints.
RELEASED_LSTM = {
    "architectures": [LSTM_ARCH],
    "model_type": "mlp_speculator",
    "base_model_archs": ["LlamaForCausalLM"],
    "emb_dim": "4096",
    "inner_dim": "4096",
    "proj_dim": "4096",
    "input_hidden_dim": 4096,
    "method": "sum_lstm",
    "n_candidates": 3,
    "n_predict": 3,
    "scale_input": True,
    "tie_lstm_embs": True,
    "tie_weights": True,
    "top_k_tokens_per_head": [1, 1, 1],
    "vocab_size": 128256,
}
RELEASED_MLP = {
    "architectures": [MLP_ARCH],
    "model_type": "mlp_speculator",
    "base_model_archs": ["LlamaForCausalLM"],
    "emb_dim": 4096,
    "inner_dim": 0,
    "n_predict": 3,
    "tie_weights": False,
    "scale_input": False,
    "vocab_size": 128256,
}


def test_released_lstm_fields():
    spec = parse_speculator_config(RELEASED_LSTM)
    assert (spec.method, spec.hidden_dim, spec.width, spec.n_predict) == ("sum_lstm", 4096, 4096, 3)
    assert spec.tie_weights and spec.tie_lstm_embs and spec.scale_input
    assert spec.base_model_archs == ("LlamaForCausalLM",)
    assert spec.max_heads() is None  # tied: any number of drafts


def test_released_mlp_fields_inner_zero_means_emb_dim():
    spec = parse_speculator_config(RELEASED_MLP)
    assert (spec.method, spec.hidden_dim, spec.width, spec.max_heads()) == (
        "sum_rnn",
        4096,
        4096,
        3,
    )


def test_mixing_weights_follow_n_predict_and_width():
    spec = parse_speculator_config({**RELEASED_MLP, "n_predict": 4, "inner_dim": 128})
    w = 0.5 ** (0.5 / 4)
    assert spec.state_weight == pytest.approx(w)
    assert spec.emb_scale == pytest.approx(((1 - w * w) * 64) ** 0.5 / w)


def test_legacy_alias_defaults_to_the_mlp_step():
    raw = {k: v for k, v in RELEASED_LSTM.items() if k != "method"}
    spec = parse_speculator_config({**raw, "architectures": [LEGACY_LSTM_ARCH]})
    assert spec.method == "sum_rnn" and spec.architecture == LEGACY_LSTM_ARCH


@pytest.mark.parametrize("value", [4096, [4096], "4096"])
def test_dims_forms(value):
    assert parse_dims(value, "emb_dim") == (4096,)


def test_dotted_dims_are_stages():
    assert parse_dims("4096.2048", "emb_dim") == (4096, 2048)


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"architectures": ["LlamaForCausalLM"]}, "names no Arctic speculator"),
        ({"architectures": [MLP_ARCH, LSTM_ARCH]}, "exactly one"),
        ({"n_predict": 0}, "n_predict must be a positive integer"),
        ({"vocab_size": "big"}, "vocab_size must be a positive integer"),
        ({"method": "sum_gru"}, "method='sum_gru' is unknown"),
        ({"inner_dim": "4096.4096", "emb_dim": "4096.4096"}, "2 stages"),
        ({"proj_dim": "2048"}, "must be equal"),
        ({"tie_weights": False}, "tie_weights=true"),
        ({"emb_dim": "wide"}, "is not a size"),
        ({"base_model_archs": 7}, "base_model_archs"),
        ({"input_hidden_dim": None}, "input_hidden_dim"),
    ],
)
def test_bad_lstm_configs_are_refused_by_name(change, needle):
    with pytest.raises(SpeculatorConfigError, match=needle):
        parse_speculator_config({**RELEASED_LSTM, **change})


def test_tied_mlp_needs_two_heads():
    with pytest.raises(SpeculatorConfigError, match="n_predict >= 2"):
        parse_speculator_config({**RELEASED_MLP, "tie_weights": True, "n_predict": 1})


def test_base_model_mismatch_is_refused_with_the_override_named():
    spec = parse_speculator_config(RELEASED_MLP)
    with pytest.raises(SpeculatorConfigError, match=envs.SKIP_SPEC_MODEL_CHECK):
        check_base_model(spec, ["Qwen2ForCausalLM"], skip=False)
    check_base_model(spec, ["LlamaForCausalLM"], skip=False)
    check_base_model(spec, ["Qwen2ForCausalLM"], skip=True)


def test_missing_base_model_archs_is_refused_unless_skipped():
    spec = parse_speculator_config({**RELEASED_MLP, "base_model_archs": None})
    with pytest.raises(SpeculatorConfigError, match="no base_model_archs"):
        check_base_model(spec, ["LlamaForCausalLM"], skip=False)
    check_base_model(spec, ["LlamaForCausalLM"], skip=True)


def test_override_variable_is_a_validated_setting():
    assert envs.read(envs.SKIP_SPEC_MODEL_CHECK, {envs.SKIP_SPEC_MODEL_CHECK: "1"}) is True
    assert envs.read(envs.SKIP_SPEC_MODEL_CHECK, {}) is False
    with pytest.raises(ValueError, match=envs.SKIP_SPEC_MODEL_CHECK):
        envs.validate_environment(environ={envs.SKIP_SPEC_MODEL_CHECK: "perhaps"})


def test_vllm_reads_the_checkpoint_with_its_mlp_speculator_config(registered, spec_root):
    from tests.spec_dec.conftest import draft_model_config, make_spec_ckpt

    ckpt = make_spec_ckpt(spec_root, "cfg-lstm", kind="lstm")
    model_config = draft_model_config(ckpt)
    assert type(model_config.hf_config).__name__ == "MLPSpeculatorConfig"
    spec = parse_speculator_config(model_config.hf_config)
    assert (spec.method, spec.hidden_dim, spec.base_model_archs) == (
        "sum_lstm",
        64,
        ("LlamaForCausalLM",),
    )


def test_registration_is_a_plugin_feature(registered):
    from pkgutil import resolve_name

    from vllm import ModelRegistry

    from arctic_inference.vllm.patch_set import ENGINE_FEATURES
    from arctic_inference.vllm.spec_dec.config import ARCHITECTURES
    from arctic_inference.vllm.spec_dec.registration import register_speculators

    (feature,) = [f for f in ENGINE_FEATURES if f.name == "arctic-speculator-models"]
    assert resolve_name(feature.setup) is register_speculators
    assert set(ARCHITECTURES) <= set(ModelRegistry.get_supported_archs())
