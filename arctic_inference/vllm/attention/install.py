"""Puts the forked backend in place of FLASH_ATTN whenever the plugin is on.

Hook: the ``get_attn_backend`` that vLLM's decoder ``Attention`` layer calls (the
module global of ``vllm.model_executor.layers.attention.attention``). The wrapper runs
vLLM's own selection first (so ``attention_backend``, platform defaults and every
refusal are upstream's), then swaps the chosen upstream ``FlashAttentionBackend`` for
:class:`ForestFlashAttentionBackend`. Any other backend is returned as selected. Why
there and not in the backend registry: vLLM caches its selection per process
(``_cached_get_attn_backend``) and other code paths (encoder attention, MLA) read the
registry too; the swap after the cache touches only decoder layers.

Rule: the patch is part of every enabled plugin, so with the plugin on every decoder
layer that selects FLASH_ATTN runs the fork. The forest path inside it is inactive
unless the engine's config has a forest config (``--forest-cascade-attn-configs``):
without one the fork's builder attaches no plan and takes vLLM's cascade decision,
and its forward is upstream's (``tests/forest/test_fork.py`` holds both against
upstream; ``tests/gpu/test_forest_gpu.py`` checks the outputs bit for bit).
"""

from __future__ import annotations

from typing import Any

import vllm.model_executor.layers.attention.attention as attention_module
from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend

from arctic_inference.patching import ArcticPatch

__all__ = ["ForestBackendSelectionPatch", "forest_backend_for"]


def forest_backend_for(backend: type) -> type:
    """The backend a decoder layer uses instead of the selected ``backend``."""
    if backend is not FlashAttentionBackend:
        return backend
    from arctic_inference.vllm.attention.flash_attn_fork import ForestFlashAttentionBackend

    return ForestFlashAttentionBackend


class ForestBackendSelectionPatch(ArcticPatch[attention_module]):
    """Swap FLASH_ATTN for the fork in decoder Attention layers."""

    _orig_get_attn_backend = attention_module.get_attn_backend

    # A plain function: on a module target it becomes the module global as is.
    def get_attn_backend(*args: Any, **kwargs: Any) -> type:
        return forest_backend_for(
            ForestBackendSelectionPatch._orig_get_attn_backend(*args, **kwargs)
        )
