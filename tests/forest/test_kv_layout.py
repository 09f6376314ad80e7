"""The KV layout is read from the backend, and the views match upstream's own split."""

from __future__ import annotations

import pytest
import torch
from forest_env import cpu_config

from arctic_inference.vllm.attention.kv_layout import (
    allocate_kv_cache,
    kv_cache_layout,
    split_kv_cache,
)


@pytest.fixture
def in_config():
    from vllm.config import set_current_vllm_config

    with set_current_vllm_config(cpu_config()):
        yield


def test_fork_layout_views_are_upstreams_views(in_config):
    from arctic_inference.vllm.attention.flash_attn_fork import ForestFlashAttentionBackend

    layout = kv_cache_layout(ForestFlashAttentionBackend)
    assert layout.axes == ("blocks", "heads", "tokens", "packed")
    kv = allocate_kv_cache(
        ForestFlashAttentionBackend,
        num_blocks=6,
        block_size=16,
        num_kv_heads=2,
        head_size=8,
        dtype=torch.float32,
    )
    kv.copy_(torch.randn(kv.shape))
    key, value = split_kv_cache(kv, layout, 8)
    # What upstream FlashAttentionImpl.forward does with its cache in vLLM 0.26.0.
    want_k, want_v = kv.transpose(1, 2).split(8, dim=-1)
    for ours, theirs in ((key, want_k), (value, want_v)):
        assert ours.shape == (6, 16, 2, 8)
        assert ours.data_ptr() == theirs.data_ptr() and ours.stride() == theirs.stride()
    assert layout.block_size(kv) == 16


def test_allocation_follows_the_stride_order(in_config):
    from arctic_inference.vllm.attention.flash_attn_fork import ForestFlashAttentionBackend

    kv = allocate_kv_cache(
        ForestFlashAttentionBackend,
        num_blocks=3,
        block_size=16,
        num_kv_heads=2,
        head_size=8,
        dtype=torch.float32,
    )
    order = ForestFlashAttentionBackend.get_kv_cache_stride_order()
    strides = [kv.stride(i) for i in order]
    assert strides == sorted(strides, reverse=True)  # memory runs in stride order


class SeparateKVBackend:
    """vLLM 0.24.0's FlashAttention cache shape: K and V on an axis of their own."""

    @staticmethod
    def get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size, cache_dtype_str="auto"):
        return (num_blocks, 2, block_size, num_kv_heads, head_size)

    @staticmethod
    def get_kv_cache_stride_order(include_num_layers_dimension=False):
        return (0, 1, 2, 3, 4)


def test_a_separate_kv_axis_is_understood():
    layout = kv_cache_layout(SeparateKVBackend)
    assert layout.axes == ("blocks", "kv", "tokens", "heads", "head")
    kv = torch.randn(4, 2, 16, 2, 8)
    key, value = split_kv_cache(kv, layout, 8)
    assert torch.equal(key, kv[:, 0]) and torch.equal(value, kv[:, 1])


class UnknownBackend(SeparateKVBackend):
    @staticmethod
    def get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size, cache_dtype_str="auto"):
        return (num_blocks * block_size, num_kv_heads, head_size * 2)


def test_an_unknown_layout_is_refused_not_misread():
    with pytest.raises(ValueError, match="names no known layout"):
        kv_cache_layout(UnknownBackend)
