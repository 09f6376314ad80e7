"""The SwiftKV bulk KV write (PyTorch fallback) against the reference packed layout."""

from __future__ import annotations

import pytest
import torch

from arctic_inference.vllm.swiftkv.kv_layout import UnsupportedKVLayout, resolve_layout
from arctic_inference.vllm.swiftkv.kv_write import write_kv, write_kv_fallback

BLOCKS, BLOCK_SIZE, HEADS, HEAD, LAYERS = 6, 16, 2, 8, 3


def _backends():
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.attention.backends.triton_attn import TritonAttentionBackend

    return [FlashAttentionBackend, TritonAttentionBackend]


def _allocate(backend, layout_name):
    """A cache tensor allocated the way vLLM does: physical order from the stride order."""
    import vllm.v1.attention.backends.utils as utils

    shape = backend.get_kv_cache_shape(BLOCKS, BLOCK_SIZE, HEADS, HEAD)
    old = utils._KV_CACHE_LAYOUT_OVERRIDE
    utils.set_kv_cache_layout(layout_name)
    try:
        order = backend.get_kv_cache_stride_order()
    finally:
        utils.set_kv_cache_layout(old)
    physical = torch.zeros([shape[i] for i in order])
    inverse = [order.index(i) for i in range(len(order))]
    return physical.permute(*inverse)


def _reference_write(caches, k, v, slots):
    """Explicit loops over the documented packed layout (B, H, N, 2*D), K then V."""
    for t, slot in enumerate(slots.tolist()):
        if slot < 0:
            continue
        blk, off = divmod(slot, BLOCK_SIZE)
        for layer, cache in enumerate(caches):
            for h in range(HEADS):
                cache[blk, h, off, :HEAD] = k[t, layer, h]
                cache[blk, h, off, HEAD:] = v[t, layer, h]


@pytest.mark.parametrize("layout_name", ["NHD", "HND"])
@pytest.mark.parametrize("backend_idx", [0, 1])
def test_fallback_writes_the_reference_layout(backend_idx, layout_name):
    backend = _backends()[backend_idx]
    layout = resolve_layout(backend, HEAD)
    assert layout.kind == "packed_bhnd"
    torch.manual_seed(0)
    tokens = 13
    k, v = torch.randn(tokens, LAYERS, HEADS, HEAD), torch.randn(tokens, LAYERS, HEADS, HEAD)
    # padding (-1), a slot in the last block, and fewer slots than tokens
    slots = torch.tensor([0, 1, 17, -1, 95, 40, 41, 42, 5, -1, 80])
    caches = [_allocate(backend, layout_name) for _ in range(LAYERS)]
    expected = [torch.zeros_like(c) for c in caches]
    _reference_write(expected, k, v, slots)
    views = [layout.split(c) for c in caches]
    assert write_kv(k, v, [kv[0] for kv in views], [kv[1] for kv in views], slots) == "torch"
    for got, want in zip(caches, expected):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert sum(int((c != 0).any(-1).sum()) for c in caches) == 9 * LAYERS * HEADS


def test_split_layout_of_older_backends():
    class OldBackend:
        @staticmethod
        def get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size):
            return (2, num_blocks, block_size, num_kv_heads, head_size)

    layout = resolve_layout(OldBackend, HEAD)
    cache = torch.zeros(2, BLOCKS, BLOCK_SIZE, HEADS, HEAD)
    k, v = torch.randn(1, 1, HEADS, HEAD), torch.randn(1, 1, HEADS, HEAD)
    kc, vc = layout.split(cache)
    write_kv_fallback(k, v, [kc], [vc], torch.tensor([33]))
    torch.testing.assert_close(cache[0, 2, 1], k[0, 0], rtol=0, atol=0)
    torch.testing.assert_close(cache[1, 2, 1], v[0, 0], rtol=0, atol=0)


def test_unknown_layout_is_refused():
    class OddBackend:
        @staticmethod
        def get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size, dtype="auto"):
            return (num_blocks, block_size * num_kv_heads * head_size * 2)

    with pytest.raises(UnsupportedKVLayout, match="OddBackend.*FLASH_ATTN or TRITON_ATTN"):
        resolve_layout(OddBackend, HEAD)


def test_mismatched_arguments_are_refused():
    k = torch.zeros(4, 2, HEADS, HEAD)
    cache = torch.zeros(BLOCKS, BLOCK_SIZE, HEADS, HEAD)
    with pytest.raises(ValueError, match="2 layers"):
        write_kv_fallback(k, k, [cache], [cache], torch.tensor([0]))
    with pytest.raises(ValueError, match="5 slots for only 4 tokens"):
        write_kv_fallback(k, k, [cache] * 2, [cache] * 2, torch.arange(5))
