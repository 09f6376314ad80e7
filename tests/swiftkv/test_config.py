"""The llama_swiftkv config: registration with AutoConfig/vLLM and validation."""

from __future__ import annotations

import json

import pytest

from arctic_inference.vllm.swiftkv.config import LlamaSwiftKVConfig, SwiftKVConfigError

BASE = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
)


def test_released_field_names_parse(registered, ckpt_dir):
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(ckpt_dir)
    assert type(cfg) is LlamaSwiftKVConfig
    assert cfg.model_type == "llama_swiftkv"
    assert cfg.num_key_value_layers == 2
    assert cfg.architectures == ["LlamaSwiftKVForCausalLM"]


def test_missing_or_null_boundary_means_all_layers():
    assert LlamaSwiftKVConfig(**BASE).num_key_value_layers == 4
    assert LlamaSwiftKVConfig(**BASE, num_key_value_layers=None).num_key_value_layers == 4


@pytest.mark.parametrize("bad", [0, 5, -1, "2", 2.0, True])
def test_bad_boundary_is_refused_with_the_fix(bad):
    with pytest.raises(SwiftKVConfigError) as err:
        LlamaSwiftKVConfig(**BASE, num_key_value_layers=bad)
    msg = str(err.value)
    assert "num_key_value_layers" in msg and "1 to num_hidden_layers (4)" in msg
    assert "\n" not in msg


@pytest.mark.parametrize("group", [2, 4, "1"])
def test_cross_layer_kv_sharing_is_refused(group):
    with pytest.raises(SwiftKVConfigError, match="key_value_group_size"):
        LlamaSwiftKVConfig(**BASE, num_key_value_layers=2, key_value_group_size=group)


def test_group_size_one_is_accepted():
    assert LlamaSwiftKVConfig(**BASE, num_key_value_layers=2, key_value_group_size=1)


def test_bad_value_in_a_checkpoint_fails_when_vllm_reads_it(registered, ckpt_dir, tmp_path):
    from vllm.config import ModelConfig

    bad = tmp_path / "bad"
    bad.mkdir()
    cfg = json.loads((ckpt_dir / "config.json").read_text())
    cfg["num_key_value_layers"] = 9
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(Exception) as err:
        ModelConfig(model=str(bad), skip_tokenizer_init=True)
    assert "num_key_value_layers must be an integer from 1 to num_hidden_layers (4)" in str(
        err.value
    )


def test_vllm_resolves_the_architecture(registered, ckpt_dir):
    from vllm import ModelRegistry
    from vllm.config import ModelConfig

    assert "LlamaSwiftKVForCausalLM" in ModelRegistry.get_supported_archs()
    mc = ModelConfig(model=str(ckpt_dir), skip_tokenizer_init=True)
    assert mc.architecture == "LlamaSwiftKVForCausalLM"
    assert mc.hf_config.num_key_value_layers == 2
    assert mc.runner_type == "generate"


def test_registration_is_a_plugin_feature():
    import pkgutil

    from arctic_inference.vllm.patch_set import ENGINE_FEATURES

    (feature,) = [f for f in ENGINE_FEATURES if f.name == "swiftkv"]
    from arctic_inference.vllm.swiftkv.registration import register_swiftkv

    assert pkgutil.resolve_name(feature.setup) is register_swiftkv
