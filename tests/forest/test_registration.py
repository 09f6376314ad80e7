"""Installation through the real plugin patch set: only for engines with a forest config."""

from __future__ import annotations

from forest_env import cpu_config


def test_patch_set_applies_the_backend_swap_only_with_a_forest_config(reverted_patches):
    import vllm.model_executor.layers.attention.attention as attention_module

    from arctic_inference.patching import is_applied
    from arctic_inference.vllm.attention.install import ForestBackendSelectionPatch
    from arctic_inference.vllm.patch_set import apply_side, register_feature_args

    original = attention_module.get_attn_backend
    register_feature_args()
    off = apply_side("worker", cpu_config())
    assert "forest-cascade-attn" not in off
    assert not is_applied(ForestBackendSelectionPatch)
    assert attention_module.get_attn_backend is original

    on = apply_side("worker", cpu_config(forest_cascade_attn_configs='{"min_group_size": 4}'))
    assert "forest-cascade-attn" in on
    assert is_applied(ForestBackendSelectionPatch)
    from arctic_inference.vllm.attention.host_tables import BlockTableHostPatch

    assert is_applied(BlockTableHostPatch)
    assert (
        attention_module.get_attn_backend
        is ForestBackendSelectionPatch.__dict__["get_attn_backend"]
    )


def test_flash_attn_is_swapped_per_engine_config_and_nothing_else_is():
    from vllm.config import set_current_vllm_config
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.attention.backends.triton_attn import TritonAttentionBackend

    from arctic_inference.vllm.attention.install import forest_backend_for

    with set_current_vllm_config(cpu_config()):
        from arctic_inference.vllm.attention.flash_attn_fork import ForestFlashAttentionBackend

    on = cpu_config(forest_cascade_attn_configs="{}")
    assert forest_backend_for(FlashAttentionBackend, on) is ForestFlashAttentionBackend
    assert forest_backend_for(FlashAttentionBackend, cpu_config()) is FlashAttentionBackend
    assert forest_backend_for(TritonAttentionBackend, on) is TritonAttentionBackend
    # The fork keeps FLASH_ATTN's identity where vLLM compares names.
    assert ForestFlashAttentionBackend.get_name() == "FLASH_ATTN"
    from vllm.v1.attention.backends import flash_attn as upstream

    from arctic_inference.vllm.attention import flash_attn_fork as fork

    assert ForestFlashAttentionBackend.get_builder_cls() is fork.FlashAttentionMetadataBuilder
    assert ForestFlashAttentionBackend.get_impl_cls() is fork.FlashAttentionImpl
    assert fork.FlashAttentionImpl is not upstream.FlashAttentionImpl
