"""Fixtures for the SwiftKV CPU tests: tiny random checkpoints and real vLLM objects.

vLLM layers look up the current ``VllmConfig`` and the tensor-parallel group
when they are built, so a one-rank gloo group is started once per session and
models are built inside ``set_current_vllm_config`` on the CPU device.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("vllm")

SHAPE = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
)


def make_ckpt(root: Path, name: str, kv_layers: int, **overrides) -> Path:
    from arctic_inference.vllm.swiftkv import make_checkpoint as mc

    config, state = mc.random_llama(
        SHAPE, vocab_size=300, seed=0, logit_scale=4.0, max_positions=512
    )
    config, state = mc.add_swiftkv(config, state, kv_layers, seed=1)
    for key, value in overrides.items():
        state[key] = value(state) if callable(value) else value
    out = root / name
    mc.write_checkpoint(out, config, state, tokenizer_from=None)
    return out


@pytest.fixture(scope="session")
def ckpt_dir(tmp_path_factory) -> Path:
    """4 layers, SwiftKV from layer 2 up."""
    return make_ckpt(tmp_path_factory.mktemp("swiftkv"), "half", kv_layers=2)


@pytest.fixture(scope="session")
def registered():
    from arctic_inference.vllm.swiftkv.registration import register_swiftkv

    register_swiftkv()


@pytest.fixture(scope="session")
def tp_group(one_rank_group):
    """vLLM's model layers look up the TP group."""


def build_vllm_model(ckpt: Path, adjust=None, **engine):
    """The real LlamaSwiftKVForCausalLM built on the CPU with the checkpoint's weights.

    ``adjust(vllm_config)`` may set what this host's platform resets when the
    config is built (CUDA-graph settings) before the model sees it.
    """
    import torch
    from safetensors.torch import load_file
    from vllm.config import DeviceConfig, ModelConfig, VllmConfig, set_current_vllm_config

    from arctic_inference.vllm.swiftkv.model import LlamaSwiftKVForCausalLM

    model_config = ModelConfig(
        model=str(ckpt), dtype="float32", max_model_len=256, skip_tokenizer_init=True
    )
    cfg = VllmConfig(model_config=model_config, device_config=DeviceConfig(device="cpu"), **engine)
    if adjust is not None:
        adjust(cfg)
    with set_current_vllm_config(cfg), torch.device("cpu"):
        model = LlamaSwiftKVForCausalLM(vllm_config=cfg)
    weights = load_file(str(ckpt / "model.safetensors"))
    loaded = model.load_weights((k, v.float()) for k, v in weights.items())
    return cfg, model, loaded, weights


@pytest.fixture
def triton_attention_backend(monkeypatch):
    """Let vLLM's Attention layers build on this GPU-less host.

    The host's platform (vLLM's "unspecified" one) names no attention backend;
    the layers are built with TRITON_ATTN's classes (nothing runs a kernel).
    """
    from vllm.platforms import current_platform

    monkeypatch.setattr(
        current_platform,
        "get_attn_backend_cls",
        lambda *a, **k: "vllm.v1.attention.backends.triton_attn.TritonAttentionBackend",
    )
