"""Where a layer's keys and values live inside its KV-cache tensor.

vLLM 0.26.0's FLASH_ATTN and TRITON_ATTN backends pack K and V into the
content dimension (logical ``(num_blocks, num_kv_heads, block_size,
2 * head_size)``, K first); older releases split them on a leading axis of 2.
The layout is read from the backend's ``get_kv_cache_shape`` rather than
assumed, and a shape this module does not know is refused, so a future
layout change fails loudly instead of writing K/V to the wrong place.
Physical strides (NHD or HND order) come from the cache tensor itself.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import torch

LayoutKind = Literal["packed_bhnd", "split_bnhd", "split_bhnd"]

# Probe sizes: all different, so each axis can be recognised by its length.
_PROBE_BLOCKS, _PROBE_BLOCK_SIZE, _PROBE_HEADS, _PROBE_HEAD = 3, 16, 5, 8


class UnsupportedKVLayout(RuntimeError):
    """The attention backend stores K/V in a shape SwiftKV cannot write."""


@dataclasses.dataclass(frozen=True)
class KVLayout:
    """How to cut one layer's cache tensor into K and V views."""

    kind: LayoutKind
    head_size: int

    def split(self, kv_cache: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """K and V views of ``kv_cache``, each ``(num_blocks, block_size, heads, head)``."""
        if self.kind == "packed_bhnd":
            nhd = kv_cache.transpose(1, 2)
            return nhd[..., : self.head_size], nhd[..., self.head_size :]
        if self.kind == "split_bnhd":
            return kv_cache[0], kv_cache[1]
        return kv_cache[0].transpose(1, 2), kv_cache[1].transpose(1, 2)


def resolve_layout(backend: type, head_size: int, cache_dtype_str: str = "auto") -> KVLayout:
    """Ask ``backend`` for its logical cache shape and name the layout it implies."""
    try:
        shape = tuple(
            backend.get_kv_cache_shape(
                _PROBE_BLOCKS, _PROBE_BLOCK_SIZE, _PROBE_HEADS, _PROBE_HEAD, cache_dtype_str
            )
        )
    except TypeError:
        shape = tuple(
            backend.get_kv_cache_shape(_PROBE_BLOCKS, _PROBE_BLOCK_SIZE, _PROBE_HEADS, _PROBE_HEAD)
        )
    B, N, H, D = _PROBE_BLOCKS, _PROBE_BLOCK_SIZE, _PROBE_HEADS, _PROBE_HEAD
    kinds: dict[tuple[int, ...], LayoutKind] = {
        (B, H, N, 2 * D): "packed_bhnd",
        (2, B, N, H, D): "split_bnhd",
        (2, B, H, N, D): "split_bhnd",
    }
    kind = kinds.get(shape)
    if kind is None:
        raise UnsupportedKVLayout(
            f"SwiftKV cannot write the KV cache of attention backend "
            f"{getattr(backend, '__name__', backend)!r}: its logical cache shape for "
            f"(blocks={B}, block_size={N}, heads={H}, head={D}) is {shape}, not a known "
            "K/V layout. Use FLASH_ATTN or TRITON_ATTN with kv_cache_dtype='auto'."
        )
    return KVLayout(kind=kind, head_size=head_size)
