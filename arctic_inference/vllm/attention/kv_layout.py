"""The one place that knows how a FlashAttention backend lays out its KV cache.

The layout is read from the backend itself, never assumed: ``get_kv_cache_shape``
gives the logical shape of one layer's cache and ``get_kv_cache_stride_order`` the
permutation vLLM allocates it in. vLLM 0.26.0 packs K and V into the last dim
(``(blocks, kv_heads, block_size, 2 * head_size)``); earlier releases kept a separate
axis of size 2. Both are handled by naming each axis from a probe call with distinct
sizes, so a backend that moves its axes again is followed, and one whose shape cannot
be read is refused with a message instead of being misread.

Every forest code path (the forward, the CPU reference tests, the GPU tests and the
bench) takes its key/value views and its block size from here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

__all__ = ["KVCacheLayout", "allocate_kv_cache", "kv_cache_layout", "split_kv_cache"]

# Distinct probe sizes, so every axis of the logical shape can be named by its size.
_PROBE = {"blocks": 7, "tokens": 32, "heads": 3, "head": 8}
_KV_PAIR = 2


@dataclasses.dataclass(frozen=True)
class KVCacheLayout:
    """Axis names of the logical cache shape and the allocation order.

    ``axes`` names each logical axis: ``blocks``, ``tokens``, ``heads`` and either
    ``head`` plus ``kv`` (K and V on their own axis) or ``packed`` (K then V in one
    axis of ``2 * head_size``). ``stride_order`` is the backend's permutation from the
    logical shape to memory order.
    """

    axes: tuple[str, ...]
    stride_order: tuple[int, ...]

    @property
    def kv_packed(self) -> bool:
        return "packed" in self.axes

    def axis(self, name: str) -> int:
        return self.axes.index(name)

    def block_size(self, kv_cache: torch.Tensor) -> int:
        """Tokens per block of a cache in this layout."""
        return int(kv_cache.shape[self.axis("tokens")])

    def describe(self) -> str:
        return f"logical ({', '.join(self.axes)}), stride order {self.stride_order}"


def kv_cache_layout(backend: Any) -> KVCacheLayout:
    """Name the axes of ``backend``'s KV cache from its own shape and stride order."""
    shape = tuple(
        backend.get_kv_cache_shape(
            num_blocks=_PROBE["blocks"],
            block_size=_PROBE["tokens"],
            num_kv_heads=_PROBE["heads"],
            head_size=_PROBE["head"],
        )
    )
    by_size = {size: name for name, size in _PROBE.items()}
    by_size[2 * _PROBE["head"]] = "packed"
    by_size[_KV_PAIR] = "kv"
    axes = tuple(by_size.get(size, "?") for size in shape)
    packed_ok = sorted(axes) == sorted(("blocks", "tokens", "heads", "packed"))
    split_ok = sorted(axes) == sorted(("blocks", "tokens", "heads", "head", "kv"))
    if not (packed_ok or split_ok):
        raise ValueError(
            f"{getattr(backend, '__name__', backend)}.get_kv_cache_shape returned {shape} "
            "for (blocks=7, block_size=32, kv_heads=3, head_size=8), which names no known "
            "layout; teach arctic_inference.vllm.attention.kv_layout the new one."
        )
    order = tuple(backend.get_kv_cache_stride_order())
    if sorted(order) != list(range(len(shape))):
        raise ValueError(f"stride order {order} is not a permutation of {len(shape)} axes.")
    return KVCacheLayout(axes=axes, stride_order=order)


def split_kv_cache(
    kv_cache: torch.Tensor, layout: KVCacheLayout, head_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Key and value views, each ``(num_blocks, block_size, num_kv_heads, head_size)``.

    Views only (no copy): writes through them land in the cache.
    """
    if layout.kv_packed:
        order = [layout.axis(n) for n in ("blocks", "tokens", "heads", "packed")]
        both = kv_cache.permute(*order)
        key, value = both.split(head_size, dim=-1)
        return key, value
    kv_axis = layout.axis("kv")
    rest = [n for n in layout.axes if n != "kv"]
    order = [rest.index(n) for n in ("blocks", "tokens", "heads", "head")]
    key = kv_cache.select(kv_axis, 0).permute(*order)
    value = kv_cache.select(kv_axis, 1).permute(*order)
    return key, value


def allocate_kv_cache(
    backend: Any,
    *,
    num_blocks: int,
    block_size: int,
    num_kv_heads: int,
    head_size: int,
    dtype: torch.dtype,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """One layer's cache as vLLM allocates it: memory in stride order, viewed logically."""
    layout = kv_cache_layout(backend)
    shape = tuple(backend.get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size))
    physical = tuple(shape[i] for i in layout.stride_order)
    inverse = [layout.stride_order.index(i) for i in range(len(shape))]
    return torch.zeros(physical, dtype=dtype, device=device).permute(*inverse)
