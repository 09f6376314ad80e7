"""LlamaSwiftKVForCausalLM built on the CPU with real vLLM layers, and the reference.

The reference forward (``reference.py``) is checked against Hugging Face
transformers where SwiftKV must be a no-op, so the GPU tests can trust it.
"""

from __future__ import annotations

import torch

from tests.swiftkv.conftest import SHAPE, build_vllm_model, make_ckpt
from tests.swiftkv.reference import ReferenceSwiftKV

IDS = [5, 17, 42, 99, 7, 250, 3, 3, 64, 128, 11]


def _hf_logits(ckpt, ids):
    """Logits of the plain Llama (HF transformers) made of the checkpoint's base tensors."""
    from safetensors.torch import load_file
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=300, max_position_embeddings=512, tie_word_embeddings=False, **SHAPE
    )
    model = LlamaForCausalLM(cfg).float().eval()
    state = {
        k: v.float()
        for k, v in load_file(str(ckpt / "model.safetensors")).items()
        if "swiftkv" not in k
    }
    model.load_state_dict(state, strict=True)
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0]


def test_reference_without_swiftkv_is_plain_llama(tmp_path):
    ckpt = make_ckpt(tmp_path, "off", kv_layers=4)
    ref = ReferenceSwiftKV(ckpt).logits(IDS)
    torch.testing.assert_close(ref, _hf_logits(ckpt, IDS), rtol=1e-4, atol=1e-4)


def test_reference_swiftkv_branch_matches_llama_when_it_must(tmp_path):
    """With one SwiftKV layer whose projections and boundary norm equal the layer's
    own, SwiftKV computes exactly the plain layer."""
    copy = {
        f"model.layers.3.self_attn.{p}_proj_swiftkv.weight": (
            lambda s, p=p: s[f"model.layers.3.self_attn.{p}_proj.weight"].clone()
        )
        for p in "qkv"
    }
    copy["model.norm_swiftkv.weight"] = lambda s: s["model.layers.3.input_layernorm.weight"].clone()
    ckpt = make_ckpt(tmp_path, "same", kv_layers=3, **copy)
    torch.testing.assert_close(
        ReferenceSwiftKV(ckpt).logits(IDS), _hf_logits(ckpt, IDS), rtol=1e-4, atol=1e-4
    )
    # ... and a real SwiftKV checkpoint is not that model.
    other = make_ckpt(tmp_path, "real", kv_layers=3)
    assert (ReferenceSwiftKV(other).logits(IDS) - _hf_logits(other, IDS)).abs().max() > 1e-2


def test_model_builds_and_loads_every_parameter(
    tp_group, registered, triton_attention_backend, ckpt_dir
):
    _, model, loaded, weights = build_vllm_model(ckpt_dir)
    params = dict(model.named_parameters())
    assert loaded == set(params)
    assert [type(layer).__name__ for layer in model.model.layers] == [
        "LlamaDecoderLayer",
        "LlamaDecoderLayer",
        "SwiftKVDecoderLayer",
        "SwiftKVDecoderLayer",
    ]
    # K of every SwiftKV layer, then V of every SwiftKV layer, in one matrix.
    expected = torch.cat(
        [
            weights[f"model.layers.{i}.self_attn.{p}_proj_swiftkv.weight"].float()
            for p in "kv"
            for i in (2, 3)
        ]
    )
    torch.testing.assert_close(params["model.swiftkv_kv_proj.weight"], expected, rtol=0, atol=0)
    torch.testing.assert_close(
        params["model.layers.3.self_attn.q_proj_swiftkv.weight"],
        weights["model.layers.3.self_attn.q_proj_swiftkv.weight"].float(),
        rtol=0,
        atol=0,
    )
    # The SwiftKV layers' own q/k/v projections are not kept.
    assert not any(n.startswith("model.layers.2.self_attn.qkv_proj") for n in params)


def test_boundary_kv_matches_the_reference(
    tp_group, registered, triton_attention_backend, ckpt_dir
):
    _, model, _, _ = build_vllm_model(ckpt_dir)
    ref = ReferenceSwiftKV(ckpt_dir)
    torch.manual_seed(0)
    t = 9
    stream = torch.randn(t, SHAPE["hidden_size"])
    part = torch.randn(t, SHAPE["hidden_size"])
    pos = torch.arange(3, 3 + t)
    with torch.no_grad():
        k, v = model.model.boundary_kv(pos, stream - part, part.clone())
    kv_in = ref._norm(stream, "model.norm_swiftkv.weight")
    for j, layer in enumerate((2, 3)):
        rk = ref._lin(kv_in, f"model.layers.{layer}.self_attn.k_proj_swiftkv.weight")
        rk = ref._rope(rk.view(t, 2, 16), pos).reshape(t, -1)
        rv = ref._lin(kv_in, f"model.layers.{layer}.self_attn.v_proj_swiftkv.weight")
        torch.testing.assert_close(k[:, j * 32 : (j + 1) * 32], rk, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(v[:, j * 32 : (j + 1) * 32], rv, rtol=1e-5, atol=1e-5)


def test_switched_off_checkpoint_is_plain_llama_layers(
    tp_group, registered, triton_attention_backend, tmp_path
):
    ckpt = make_ckpt(tmp_path, "off", kv_layers=4)
    _, model, loaded, _ = build_vllm_model(ckpt)
    assert model.model.num_swiftkv == 0
    assert all(type(layer).__name__ == "LlamaDecoderLayer" for layer in model.model.layers)
    assert loaded == {n for n, _ in model.named_parameters()}


def test_quantized_kv_cache_is_refused(tp_group, registered, triton_attention_backend, ckpt_dir):
    import pytest
    from vllm.config import CacheConfig

    from arctic_inference.vllm.swiftkv.model import SwiftKVUnsupported

    with pytest.raises(SwiftKVUnsupported, match="kv_cache_dtype='auto'"):
        build_vllm_model(ckpt_dir, cache_config=CacheConfig(cache_dtype="fp8"))
