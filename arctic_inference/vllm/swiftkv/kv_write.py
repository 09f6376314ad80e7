"""Bulk KV-cache write for the layers SwiftKV skips during prefill.

Given the keys and values of all SwiftKV layers for a batch of tokens,
``k``/``v`` of shape ``(tokens, layers, kv_heads, head_size)``, and one
``slot_mapping`` (slot = block * block_size + offset; negative = padding,
skipped), write token ``t`` of layer ``l`` into ``k_caches[l][block, offset]``.
The cache views are ``(num_blocks, block_size, kv_heads, head_size)`` with any
strides (see :mod:`.kv_layout`).

On CUDA one Triton launch writes every layer (grid: tokens x layers); the
PyTorch fallback (CPU, or caches whose strides differ between layers) writes
one layer at a time with advanced indexing. Both write exactly the same
elements; the tests hold them against each other and a reference layout.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

try:  # Triton ships with CUDA builds of torch; CPU-only hosts use the fallback.
    import triton
    import triton.language as tl

    _HAVE_TRITON = True
except ImportError:  # pragma: no cover - depends on the install
    _HAVE_TRITON = False


def write_kv_fallback(
    k: torch.Tensor,
    v: torch.Tensor,
    k_caches: Sequence[torch.Tensor],
    v_caches: Sequence[torch.Tensor],
    slot_mapping: torch.Tensor,
) -> None:
    """Plain PyTorch write (one indexed assignment per layer and per K/V)."""
    _check_args(k, v, k_caches, v_caches, slot_mapping)
    n = slot_mapping.numel()
    slots = slot_mapping.to(torch.int64)
    keep = slots >= 0
    token_ids = torch.nonzero(keep[:n], as_tuple=True)[0]
    slots = slots[token_ids]
    block_size = k_caches[0].shape[1]
    blocks, offsets = slots // block_size, slots % block_size
    for layer, (kc, vc) in enumerate(zip(k_caches, v_caches)):
        kc[blocks, offsets] = k[token_ids, layer].to(kc.dtype)
        vc[blocks, offsets] = v[token_ids, layer].to(vc.dtype)


def _check_args(k, v, k_caches, v_caches, slot_mapping) -> None:
    if k.dim() != 4 or k.shape != v.shape:
        raise ValueError(f"k and v must be (tokens, layers, heads, head); got {k.shape}, {v.shape}")
    if not (len(k_caches) == len(v_caches) == k.shape[1]):
        raise ValueError(
            f"{k.shape[1]} layers of K/V but {len(k_caches)} K and {len(v_caches)} V caches"
        )
    if slot_mapping.numel() > k.shape[0]:
        raise ValueError(f"{slot_mapping.numel()} slots for only {k.shape[0]} tokens")
    for kc in list(k_caches) + list(v_caches):
        if kc.dim() != 4 or tuple(kc.shape[2:]) != tuple(k.shape[2:]):
            raise ValueError(
                f"cache view {tuple(kc.shape)} does not hold heads x head {tuple(k.shape[2:])}"
            )


def _uniform_strides(caches: Sequence[torch.Tensor]) -> bool:
    first = caches[0]
    return all(c.stride() == first.stride() and c.dtype == first.dtype for c in caches)


def _element_offsets(caches: Sequence[torch.Tensor], base: torch.Tensor) -> list[int] | None:
    """Element offset of each cache from ``base`` (None if not a whole number)."""
    size = base.element_size()
    deltas = [c.data_ptr() - base.data_ptr() for c in caches]
    if any(d % size for d in deltas):
        return None
    return [d // size for d in deltas]


if _HAVE_TRITON:

    @triton.jit
    def _swiftkv_write_kernel(
        k_ptr,
        v_ptr,
        kc_base,
        vc_base,
        k_off_ptr,
        v_off_ptr,
        slot_ptr,
        stride_kt,
        stride_kl,
        stride_kh,
        stride_vt,
        stride_vl,
        stride_vh,
        c_sb,
        c_sn,
        c_sh,
        c_sd,
        block_size,
        HEADS: tl.constexpr,
        HEAD: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        token = tl.program_id(0)
        layer = tl.program_id(1)
        slot = tl.load(slot_ptr + token).to(tl.int64)
        if slot < 0:
            return
        blk = slot // block_size
        off = slot % block_size
        k_layer = tl.load(k_off_ptr + layer)
        v_layer = tl.load(v_off_ptr + layer)
        idx = tl.arange(0, BLOCK)
        mask = idx < HEADS * HEAD
        h = idx // HEAD
        d = idx % HEAD
        src_k = token.to(tl.int64) * stride_kt + layer * stride_kl + h * stride_kh + d
        src_v = token.to(tl.int64) * stride_vt + layer * stride_vl + h * stride_vh + d
        dst = blk * c_sb + off * c_sn + h * c_sh + d * c_sd
        kval = tl.load(k_ptr + src_k, mask=mask)
        vval = tl.load(v_ptr + src_v, mask=mask)
        tl.store(kc_base + k_layer + dst, kval.to(kc_base.dtype.element_ty), mask=mask)
        tl.store(vc_base + v_layer + dst, vval.to(vc_base.dtype.element_ty), mask=mask)


class OffsetTable:
    """Per-layer element offsets of the caches, kept on the device.

    The caches are bound once per engine, so the table is built on first use
    and rebuilt only when the cache tensors change.
    """

    def __init__(self) -> None:
        self._key: tuple[int, ...] | None = None
        self._tables: tuple[torch.Tensor, torch.Tensor] | None = None

    def get(self, k_caches, v_caches) -> tuple[torch.Tensor, torch.Tensor] | None:
        key = tuple(c.data_ptr() for c in list(k_caches) + list(v_caches))
        if key != self._key:
            k_off = _element_offsets(k_caches, k_caches[0])
            v_off = _element_offsets(v_caches, v_caches[0])
            if k_off is None or v_off is None:
                self._key, self._tables = key, None
                return None
            device = k_caches[0].device
            self._tables = (
                torch.tensor(k_off, dtype=torch.int64, device=device),
                torch.tensor(v_off, dtype=torch.int64, device=device),
            )
            self._key = key
        return self._tables


def triton_write_possible(
    k: torch.Tensor, k_caches: Sequence[torch.Tensor], v_caches: Sequence[torch.Tensor]
) -> bool:
    """Whether the Triton kernel can do this write (CUDA, uniform strides)."""
    return (
        _HAVE_TRITON
        and k.is_cuda
        and k.stride(-1) == 1
        and _uniform_strides(list(k_caches))
        and _uniform_strides(list(v_caches))
        and k_caches[0].stride() == v_caches[0].stride()
    )


def write_kv_triton(
    k: torch.Tensor,
    v: torch.Tensor,
    k_caches: Sequence[torch.Tensor],
    v_caches: Sequence[torch.Tensor],
    slot_mapping: torch.Tensor,
    table: OffsetTable | None = None,
) -> bool:
    """One-launch write of every layer; returns False (nothing written) if not possible."""
    _check_args(k, v, k_caches, v_caches, slot_mapping)
    if not triton_write_possible(k, k_caches, v_caches) or v.stride(-1) != 1:
        return False
    offsets = (table or OffsetTable()).get(k_caches, v_caches)
    if offsets is None:
        return False
    n = slot_mapping.numel()
    if n == 0:
        return True
    heads, head = k.shape[2], k.shape[3]
    kc0 = k_caches[0]
    _swiftkv_write_kernel[(n, k.shape[1])](
        k,
        v,
        kc0,
        v_caches[0],
        offsets[0],
        offsets[1],
        slot_mapping,
        k.stride(0),
        k.stride(1),
        k.stride(2),
        v.stride(0),
        v.stride(1),
        v.stride(2),
        kc0.stride(0),
        kc0.stride(1),
        kc0.stride(2),
        kc0.stride(3),
        kc0.shape[1],
        HEADS=heads,
        HEAD=head,
        BLOCK=triton.next_power_of_2(heads * head),
    )
    return True


def write_kv(
    k: torch.Tensor,
    v: torch.Tensor,
    k_caches: Sequence[torch.Tensor],
    v_caches: Sequence[torch.Tensor],
    slot_mapping: torch.Tensor,
    table: OffsetTable | None = None,
) -> str:
    """Write with the kernel where it applies, else the fallback; returns which ran."""
    if write_kv_triton(k, v, k_caches, v_caches, slot_mapping, table):
        return "triton"
    write_kv_fallback(k, v, k_caches, v_caches, slot_mapping)
    return "torch"
