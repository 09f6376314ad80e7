"""Puts the forked backend in place of FLASH_ATTN for engines that ask for forest.

Hook: the ``get_attn_backend`` that vLLM's decoder ``Attention`` layer calls (the
module global of ``vllm.model_executor.layers.attention.attention``). The wrapper runs
vLLM's own selection first, then swaps the chosen upstream ``FlashAttentionBackend``
for :class:`ForestFlashAttentionBackend` when the config the model is built under has
a forest config. Why there and not in the backend registry: vLLM caches its selection
per process (``_cached_get_attn_backend``), so a registry override would leak into
other engines of the same process; the swap after the cache is decided per engine.

Current rule: the fork is installed only when the forest config is given. Without it
the Attention layers keep vLLM's own FlashAttention, untouched, even with the plugin
on (the fork's forest path has not been validated on a GPU yet).
"""

from __future__ import annotations

from typing import Any

import vllm.model_executor.layers.attention.attention as attention_module
from vllm.config import get_current_vllm_config_or_none
from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.attention.forest_config import forest_config_for

__all__ = ["ForestBackendSelectionPatch", "forest_backend_for"]


def forest_backend_for(backend: type, vllm_config: Any | None) -> type:
    """The backend a layer built under ``vllm_config`` should use instead of ``backend``."""
    if backend is not FlashAttentionBackend or forest_config_for(vllm_config) is None:
        return backend
    from arctic_inference.vllm.attention.flash_attn_fork import ForestFlashAttentionBackend

    return ForestFlashAttentionBackend


class ForestBackendSelectionPatch(ArcticPatch[attention_module]):
    """Swap FLASH_ATTN for the forest fork in decoder Attention layers of forest engines."""

    _orig_get_attn_backend = attention_module.get_attn_backend

    # A plain function: on a module target it becomes the module global as is.
    def get_attn_backend(*args: Any, **kwargs: Any) -> type:
        backend = ForestBackendSelectionPatch._orig_get_attn_backend(*args, **kwargs)
        return forest_backend_for(backend, get_current_vllm_config_or_none())
