"""Prefix groups from block tables: pure (numpy in, groups out), no vLLM, no GPU.

Requests whose leading block-table entries are the *same physical blocks* share that
KV prefix (vLLM's prefix cache hands out one block to every request with the same
tokens). A group is a set of requests and a number of leading blocks they all share;
each request is in at most one group. Grouping is a recursive split of a block trie:

1. requests are bucketed by their block at the current column;
2. a bucket's shared prefix is extended while every member has the same block;
3. a bucket is then either kept as one group or split at the column where its
   members diverge, whichever saves more KV-block reads (a group of ``g`` requests
   sharing ``P`` blocks reads them once instead of ``g`` times: ``(g - 1) * P`` saved).

Only fully computed blocks are shareable: a request's prefix is capped at
``num_computed_tokens // block_size`` blocks, because the grouped prefix call is
non-causal and a query must not see KV it would not see causally. That cap also makes
every prefix block-aligned.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from arctic_inference.vllm.attention.forest_config import MIN_REQUESTS, ForestConfig

__all__ = ["ForestGrouping", "PrefixGroup", "find_prefix_groups", "ineligible_reason"]


@dataclasses.dataclass(frozen=True)
class PrefixGroup:
    """Requests (batch indices, ascending) sharing their first ``prefix_blocks`` blocks."""

    requests: tuple[int, ...]
    prefix_blocks: int

    @property
    def saved_block_reads(self) -> int:
        return (len(self.requests) - 1) * self.prefix_blocks


@dataclasses.dataclass(frozen=True)
class ForestGrouping:
    """The groups of one batch; requests in no group are attended to as usual."""

    num_reqs: int
    groups: tuple[PrefixGroup, ...]

    def prefix_blocks_per_request(self) -> np.ndarray:
        """Blocks each request reads through its group (0 for ungrouped requests)."""
        out = np.zeros(self.num_reqs, dtype=np.int32)
        for group in self.groups:
            out[list(group.requests)] = group.prefix_blocks
        return out

    @property
    def grouped_requests(self) -> int:
        return sum(len(g.requests) for g in self.groups)


def ineligible_reason(
    *,
    num_reqs: int,
    max_query_len: int,
    causal: object,
    dcp_world_size: int,
    full_cuda_graph: bool,
    sliding_window: bool,
    config: ForestConfig,
) -> str | None:
    """Why this batch cannot use forest attention, or None when it can."""
    if num_reqs < MIN_REQUESTS:
        return f"fewer than {MIN_REQUESTS} requests"
    if causal is not True:
        return "attention is not causal"
    if dcp_world_size > 1:
        return "decode context parallelism is on"
    if full_cuda_graph:
        return "full CUDA graphs are on"
    if sliding_window:
        return "sliding-window attention"
    if max_query_len > config.max_query_len:
        return f"a query is longer than max_query_len={config.max_query_len}"
    return None


def find_prefix_groups(
    block_table: np.ndarray,
    num_computed_tokens: np.ndarray,
    block_size: int,
    config: ForestConfig,
) -> ForestGrouping | None:
    """Groups for one batch, or None when grouping would not pay off.

    ``block_table``: ``(num_reqs, width)`` physical block ids (only the columns up to
    the longest computed prefix are read). ``num_computed_tokens``: per request, tokens
    already in the cache before this step's queries.
    """
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
            # Not enough gained over the parent as one group; deeper splits may gain.
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
