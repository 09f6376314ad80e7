"""The first, loop-based grouping and plan build, kept as the oracle of the fast ones.

A direct transcription of the grouping's definition (a recursive split of the block
trie, one numpy call per trie node) and of the plan (one loop step per group and per
request). The property tests check the vectorised versions against these, and the
planner CPU bench times them as the baseline. Not used by the plugin.
"""

from __future__ import annotations

import numpy as np
import torch

from arctic_inference.vllm.attention.forest_config import ForestConfig
from arctic_inference.vllm.attention.grouping import ForestGrouping, PrefixGroup
from arctic_inference.vllm.attention.plan import ForestPlan

__all__ = ["oracle_build_forest_plan", "oracle_find_prefix_groups"]


def oracle_find_prefix_groups(
    block_table: np.ndarray,
    num_computed_tokens: np.ndarray,
    block_size: int,
    config: ForestConfig,
) -> ForestGrouping | None:
    """Groups for one batch, or None when grouping would not pay off."""
    table = np.asarray(block_table)
    computed = np.asarray(num_computed_tokens, dtype=np.int64)
    num_reqs = int(computed.shape[0])
    if table.ndim != 2 or table.shape[0] < num_reqs or block_size <= 0:
        raise ValueError(
            f"find_prefix_groups: block_table of shape {table.shape} does not hold "
            f"{num_reqs} requests (block_size {block_size})."
        )
    cap = np.minimum(computed // block_size, table.shape[1]).astype(np.int64)
    groups = _best_partition(table, cap, np.flatnonzero(cap >= 1), 0, 0, config)
    groups.sort(key=lambda g: (-g.saved_block_reads, g.requests))
    kept = groups[: config.max_non_singleton_groups]
    grouped = sum(len(g.requests) for g in kept)
    if not kept or grouped < config.min_non_singleton_fraction * num_reqs:
        return None
    kept.sort(key=lambda g: g.requests[0])
    return ForestGrouping(num_reqs=num_reqs, groups=tuple(kept))


def _shared_prefix(table: np.ndarray, cap: np.ndarray, members: np.ndarray, start: int) -> int:
    """Blocks shared by all ``members``, given that they share ``[0, start]``."""
    limit = int(cap[members].min())
    if limit <= start + 1:
        return limit
    window = table[members, start:limit]
    same = (window == window[0]).all(axis=0)
    diverge = np.flatnonzero(~same)
    return start + (int(diverge[0]) if diverge.size else limit - start)


def _best_partition(
    table: np.ndarray,
    cap: np.ndarray,
    members: np.ndarray,
    column: int,
    parent_blocks: int,
    config: ForestConfig,
) -> list[PrefixGroup]:
    """Best groups among ``members``, who share ``column`` blocks already."""
    out: list[PrefixGroup] = []
    live = members[cap[members] > column]
    if live.size < config.min_group_size:
        return out
    keys = table[live, column]
    order = np.argsort(keys, kind="stable")
    live, keys = live[order], keys[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    for bucket in np.split(live, starts[1:]):
        if bucket.size < config.min_group_size:
            continue
        bucket = np.sort(bucket)
        blocks = _shared_prefix(table, cap, bucket, column)
        if blocks - parent_blocks < config.min_additional_prefix_blocks:
            whole: list[PrefixGroup] = []
        else:
            whole = [PrefixGroup(tuple(int(r) for r in bucket), blocks)]
        deeper = _best_partition(
            table, cap, bucket, blocks, blocks if whole else parent_blocks, config
        )
        if _saved(deeper) > _saved(whole):
            out.extend(deeper)
        else:
            out.extend(whole)
    return out


def _saved(groups: list[PrefixGroup]) -> int:
    return sum(g.saved_block_reads for g in groups)


def oracle_build_forest_plan(
    grouping: ForestGrouping,
    *,
    query_start_loc_cpu: np.ndarray,
    block_table_cpu: np.ndarray,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    max_seq_len: int,
    block_size: int,
) -> ForestPlan:
    """The plan, built with one loop step per group and per grouped request."""
    device = block_table.device
    qsl = np.asarray(query_start_loc_cpu, dtype=np.int64)
    num_reqs = grouping.num_reqs
    prefix_blocks = np.zeros(num_reqs, dtype=np.int32)
    for group in grouping.groups:
        prefix_blocks[list(group.requests)] = group.prefix_blocks

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
