"""Installation through the real plugin patch set: the fork replaces FLASH_ATTN whenever
the plugin is on; the forest machinery (host block tables) only with a forest config."""

from __future__ import annotations

import pytest
from forest_env import cpu_config

FLASH = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"
TRITON = "vllm.v1.attention.backends.triton_attn.TritonAttentionBackend"


def test_patch_set_swaps_the_backend_with_the_plugin_on_even_without_forest(reverted_patches):
    import vllm.model_executor.layers.attention.attention as attention_module

    from arctic_inference.patching import is_applied
    from arctic_inference.vllm.attention.host_tables import BlockTableHostPatch
    from arctic_inference.vllm.attention.install import ForestBackendSelectionPatch
    from arctic_inference.vllm.patch_set import apply_side, register_feature_args

    original = attention_module.get_attn_backend
    register_feature_args()
    off = apply_side("worker", cpu_config())
    assert "flash-attn-fork" in off and "forest-cascade-attn" not in off
    assert is_applied(ForestBackendSelectionPatch)
    assert not is_applied(BlockTableHostPatch)
    assert attention_module.get_attn_backend is not original
    assert (
        attention_module.get_attn_backend
        is ForestBackendSelectionPatch.__dict__["get_attn_backend"]
    )

    on = apply_side("worker", cpu_config(forest_cascade_attn_configs='{"min_group_size": 4}'))
    assert "flash-attn-fork" in on and "forest-cascade-attn" in on
    assert is_applied(BlockTableHostPatch)


def _layer(monkeypatch, backend_path: str, **arctic):
    """A real decoder Attention layer built on the CPU with vLLM's selection of ``backend_path``."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.layers.attention import Attention
    from vllm.platforms import current_platform
    from vllm.v1.attention.selector import _cached_get_attn_backend

    # This GPU-less host's platform names no backend; a CUDA one selects FLASH_ATTN itself.
    monkeypatch.setattr(current_platform, "get_attn_backend_cls", lambda *a, **k: backend_path)
    _cached_get_attn_backend.cache_clear()
    config = cpu_config(**arctic)
    with set_current_vllm_config(config), torch.device("cpu"):
        return Attention(4, 16, 0.25, num_kv_heads=2, prefix=f"layers.{len(backend_path)}.attn")


@pytest.mark.parametrize("arctic", [{}, {"forest_cascade_attn_configs": "{}"}])
def test_real_attention_layer_selects_the_fork_for_flash_attn(
    reverted_patches, distributed_cpu, monkeypatch, arctic
):
    from vllm.v1.attention.backends import flash_attn as upstream

    from arctic_inference.vllm.attention.install import ForestBackendSelectionPatch

    ForestBackendSelectionPatch.apply()
    layer = _layer(monkeypatch, FLASH, **arctic)
    from arctic_inference.vllm.attention import flash_attn_fork as fork

    assert layer.attn_backend is fork.ForestFlashAttentionBackend
    assert type(layer.impl) is fork.FlashAttentionImpl
    assert type(layer.impl) is not upstream.FlashAttentionImpl
    # vLLM compares backend names (KV connectors, speculative decoding): unchanged.
    assert layer.attn_backend.get_name() == "FLASH_ATTN"


def test_other_backends_and_the_plugin_off_keep_upstream(
    reverted_patches, distributed_cpu, monkeypatch
):
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.attention.backends.triton_attn import TritonAttentionBackend

    from arctic_inference.vllm.attention.install import ForestBackendSelectionPatch

    # Plugin off: nothing applied, vLLM's own class.
    assert _layer(monkeypatch, FLASH).attn_backend is FlashAttentionBackend
    ForestBackendSelectionPatch.apply()
    assert _layer(monkeypatch, TRITON).attn_backend is TritonAttentionBackend


def test_swap_rule_is_by_backend_class_only():
    from vllm.config import set_current_vllm_config
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.attention.backends.triton_attn import TritonAttentionBackend

    from arctic_inference.vllm.attention.install import forest_backend_for

    with set_current_vllm_config(cpu_config()):
        from arctic_inference.vllm.attention import flash_attn_fork as fork

    assert forest_backend_for(FlashAttentionBackend) is fork.ForestFlashAttentionBackend
    assert forest_backend_for(TritonAttentionBackend) is TritonAttentionBackend
    assert fork.ForestFlashAttentionBackend.get_builder_cls() is fork.FlashAttentionMetadataBuilder
    assert fork.ForestFlashAttentionBackend.get_impl_cls() is fork.FlashAttentionImpl
