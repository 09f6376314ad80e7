"""Groups turned into the index tensors of the two kernel calls (one build per step).

The grouped prefix call sees each group as one virtual sequence: the queries of all its
requests, gathered into group order (``prefix_token_index``), against the group's
shared blocks (the first member's leading block-table entries). The suffix call sees
every request with its own blocks after its group prefix: the block table shifted left
by the request's prefix blocks and ``seq_len - prefix_len`` KV tokens.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from arctic_inference.vllm.attention.grouping import ForestGrouping

__all__ = ["ForestPlan", "build_forest_plan"]


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
    """Build the plan; CPU index work here, device tensors follow ``block_table``."""
    device = block_table.device
    qsl = np.asarray(query_start_loc_cpu, dtype=np.int64)
    num_reqs = grouping.num_reqs
    prefix_blocks = grouping.prefix_blocks_per_request()

    rows: list[np.ndarray] = []
    group_tokens: list[int] = []
    group_blocks: list[int] = []
    for group in grouping.groups:
        reqs = np.asarray(group.requests, dtype=np.int64)
        tokens = [np.arange(qsl[r], qsl[r + 1]) for r in reqs]
        rows.extend(tokens)
        group_tokens.append(int(sum(t.size for t in tokens)))
        group_blocks.append(group.prefix_blocks)
    token_index = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    cu = np.zeros(len(group_tokens) + 1, dtype=np.int32)
    cu[1:] = np.cumsum(group_tokens)
    max_blocks = max(group_blocks, default=0)
    prefix_table = np.zeros((len(group_blocks), max(max_blocks, 1)), dtype=np.int32)
    for i, group in enumerate(grouping.groups):
        first = group.requests[0]
        prefix_table[i, : group.prefix_blocks] = block_table_cpu[first, : group.prefix_blocks]

    width = block_table.shape[1]
    shift = torch.from_numpy(prefix_blocks.astype(np.int64)).to(device)
    # Columns past the row's end repeat its last entry: the kernel reads only the
    # blocks that ``suffix_seqused_k`` covers, so the padding is never touched.
    columns = (
        torch.arange(width, device=device, dtype=torch.int64)[None, :] + shift[:, None]
    ).clamp_(max=width - 1)
    shifted = torch.gather(block_table[:num_reqs], 1, columns)
    prefix_len = torch.from_numpy((prefix_blocks * block_size).astype(np.int32)).to(device)

    def to_device(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
        return torch.from_numpy(array).to(device=device, dtype=dtype)

    return ForestPlan(
        num_groups=len(grouping.groups),
        prefix_token_index=to_device(token_index, torch.int64),
        prefix_cu_seqlens_q=to_device(cu, torch.int32),
        prefix_seqused_k=to_device(
            np.asarray(group_blocks, dtype=np.int32) * block_size, torch.int32
        ),
        prefix_block_table=to_device(prefix_table, torch.int32),
        max_prefix_query_len=max(group_tokens, default=0),
        max_prefix_kv_len=max_blocks * block_size,
        suffix_block_table=shifted.to(torch.int32).contiguous(),
        suffix_seqused_k=(seq_lens[:num_reqs] - prefix_len).to(torch.int32),
        max_suffix_kv_len=int(max_seq_len),
    )
