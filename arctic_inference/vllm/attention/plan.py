"""Groups turned into the index tensors of the two kernel calls (one build per step).

The grouped prefix call sees each group as one virtual sequence: the queries of all its
requests, gathered into group order (``prefix_token_index``), against the group's
shared blocks (the first member's leading block-table entries). The suffix call sees
every request with its own blocks after its group prefix: the block table shifted left
by the request's prefix blocks and ``seq_len - prefix_len`` KV tokens.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

import numpy as np
import torch

from arctic_inference.vllm.attention.grouping import ForestGrouping

__all__ = ["ForestPlan", "HostIndex", "build_forest_plan", "host_index", "upload"]


@dataclasses.dataclass
class ForestPlan:
    """Everything the forest forward needs beyond the upstream metadata."""

    num_groups: int
    prefix_token_index: torch.Tensor  # (Tg,) int64: batch token rows, group order
    prefix_cu_seqlens_q: torch.Tensor  # (G + 1,) int32
    prefix_seqused_k: torch.Tensor  # (G,) int32: shared tokens per group
    prefix_block_table: torch.Tensor  # (G, max prefix blocks) int32
    max_prefix_query_len: int
    max_prefix_kv_len: int
    suffix_block_table: torch.Tensor  # (num_reqs, width) int32, shifted per request
    suffix_seqused_k: torch.Tensor  # (num_reqs,) int32
    max_suffix_kv_len: int
    # Static plans (:mod:`.static_plan`): tensors in persistent buffers, shapes fixed by
    # the padded batch; the prefix call runs even when nothing is grouped.
    static: bool = False


@dataclasses.dataclass(frozen=True)
class HostIndex:
    """The plan's host arrays, built with a fixed number of numpy calls per step."""

    prefix_blocks: np.ndarray  # (num_reqs,) int32: blocks read through the group
    token_index: np.ndarray  # (Tg,) int64
    cu_seqlens: np.ndarray  # (G + 1,) int32
    group_blocks: np.ndarray  # (G,) int64
    prefix_table: np.ndarray  # (G, max(max prefix blocks, 1)) int32


def host_index(
    grouping: ForestGrouping, query_start_loc_cpu: np.ndarray, block_table_cpu: np.ndarray
) -> HostIndex:
    """The host arrays of the plan; no loop step per request or per block."""
    qsl = np.asarray(query_start_loc_cpu, dtype=np.int64)
    groups = grouping.groups
    count = len(groups)
    members = np.fromiter(itertools.chain.from_iterable(g.requests for g in groups), np.int64)
    sizes = np.fromiter((len(g.requests) for g in groups), np.int64, count=count)
    group_blocks = np.fromiter((g.prefix_blocks for g in groups), np.int64, count=count)
    prefix_blocks = np.zeros(grouping.num_reqs, dtype=np.int32)
    prefix_blocks[members] = np.repeat(group_blocks, sizes)
    # Query rows of the members in group order: member m's rows are qsl[m] .. qsl[m + 1].
    starts = qsl[members]
    lens = qsl[members + 1] - starts
    ends = np.cumsum(lens)
    token_index = np.arange(int(ends[-1]) if ends.size else 0, dtype=np.int64)
    token_index += np.repeat(starts - (ends - lens), lens)
    cu = np.zeros(count + 1, dtype=np.int32)
    cu[1:] = ends[np.cumsum(sizes) - 1]  # a group's tokens end with its last member's
    max_blocks = int(group_blocks.max(initial=0))
    prefix_table = np.zeros((count, max(max_blocks, 1)), dtype=np.int32)
    if count:
        firsts = np.fromiter((g.requests[0] for g in groups), np.int64, count=count)
        inside = np.arange(max_blocks)[None, :] < group_blocks[:, None]
        prefix_table[:, :max_blocks] = np.where(inside, block_table_cpu[firsts, :max_blocks], 0)
    return HostIndex(prefix_blocks, token_index, cu, group_blocks, prefix_table)


def upload(arrays: Sequence[np.ndarray], device: torch.device) -> list[torch.Tensor]:
    """The host arrays on ``device`` as int64 tensors of their shapes, through one copy.

    A copy from pageable host memory first waits for all queued GPU work (CUDA's rule
    for pageable host-to-device transfers), so one small copy per array stalled the
    host every step until the GPU had drained, losing the overlap of the next step's
    preparation with this step's kernels. One pinned buffer copied without blocking
    keeps the host ahead; PyTorch's pinned-memory cache does not hand the buffer out
    again before the copy has finished.
    """
    flat_host = torch.from_numpy(
        np.concatenate([np.asarray(a, dtype=np.int64).reshape(-1) for a in arrays])
        if arrays
        else np.zeros(0, dtype=np.int64)
    )
    if device.type == "cuda":
        flat = flat_host.pin_memory().to(device, non_blocking=True)
    else:
        flat = flat_host.to(device)
    out, start = [], 0
    for array in arrays:
        out.append(flat[start : start + array.size].view(array.shape))
        start += array.size
    return out


def build_forest_plan(
    grouping: ForestGrouping,
    *,
    query_start_loc_cpu: np.ndarray,
    block_table_cpu: np.ndarray,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    max_seq_len: int,
    block_size: int,
) -> ForestPlan:
    """Build the plan; CPU index work here, one upload, device tensors follow ``block_table``."""
    device = block_table.device
    num_reqs = grouping.num_reqs
    host = host_index(grouping, query_start_loc_cpu, block_table_cpu)
    prefix_blocks = host.prefix_blocks
    max_blocks = int(host.group_blocks.max(initial=0))
    shift, token_index, cu_seqlens, group_blocks, prefix_table = upload(
        [prefix_blocks, host.token_index, host.cu_seqlens, host.group_blocks, host.prefix_table],
        device,
    )

    width = block_table.shape[1]
    # Columns past the row's end repeat its last entry: the kernel reads only the
    # blocks that ``suffix_seqused_k`` covers, so the padding is never touched.
    columns = (
        torch.arange(width, device=device, dtype=torch.int64)[None, :] + shift[:, None]
    ).clamp_(max=width - 1)
    shifted = torch.gather(block_table[:num_reqs], 1, columns)

    return ForestPlan(
        num_groups=len(grouping.groups),
        prefix_token_index=token_index,
        prefix_cu_seqlens_q=cu_seqlens.to(torch.int32),
        prefix_seqused_k=(group_blocks * block_size).to(torch.int32),
        prefix_block_table=prefix_table.to(torch.int32),
        max_prefix_query_len=int(np.diff(host.cu_seqlens).max(initial=0)),
        max_prefix_kv_len=max_blocks * block_size,
        suffix_block_table=shifted.to(torch.int32).contiguous(),
        suffix_seqused_k=(seq_lens[:num_reqs] - shift * block_size).to(torch.int32),
        max_suffix_kv_len=int(max_seq_len),
    )
