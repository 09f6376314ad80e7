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

This runs on the host before every planned decode step, so it is built to cost a few
numpy calls plus one Python pass over the requests, never one per block: the capped
rows are sorted, so that requests sharing a prefix are adjacent, the shared length of
each adjacent pair is found with one vectorised comparison, and the trie's nodes are
read off those lengths (the lcp intervals of a sorted string array). A batch whose
first blocks cannot form enough groups is refused from its first column alone.
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
        return "the step runs a full CUDA graph"
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
    live = np.flatnonzero(cap >= 1)
    if live.size < config.min_group_size:
        return None
    if not _first_blocks_may_pay(table[live, 0], num_reqs, config):
        return None
    groups = _best_groups(_PrefixTree(table, cap, live), config)
    groups.sort(key=lambda g: (-g.saved_block_reads, g.requests))
    kept = groups[: config.max_non_singleton_groups]
    grouped = sum(len(g.requests) for g in kept)
    if not kept or grouped < config.min_non_singleton_fraction * num_reqs:
        return None
    kept.sort(key=lambda g: g.requests[0])
    return ForestGrouping(num_reqs=num_reqs, groups=tuple(kept))


def _first_blocks_may_pay(first: np.ndarray, num_reqs: int, config: ForestConfig) -> bool:
    """False when the first column alone rules every grouping out.

    Every group lies inside one bucket of equal first blocks, so the requests in buckets
    of at least ``min_group_size`` bound the grouped count from above.
    """
    keys = np.sort(first)
    same = keys[1:] == keys[:-1]
    if not same.any():
        return False
    edges = np.concatenate(([0], np.flatnonzero(~same) + 1, [keys.size]))
    sizes = edges[1:] - edges[:-1]
    groupable = int(sizes[sizes >= config.min_group_size].sum())
    return groupable > 0 and groupable >= config.min_non_singleton_fraction * num_reqs


class _Node:
    """A trie node: sorted rows ``[lo, hi)`` share exactly ``depth`` leading blocks."""

    __slots__ = ("children", "depth", "hi", "lo", "saved", "whole")

    def __init__(self, lo: int, depth: int) -> None:
        self.lo = lo
        self.hi = lo
        self.depth = depth
        self.children: list[_Node] = []
        self.saved = 0  # KV-block reads its best groups save (0 until looked at)
        self.whole = False  # its best groups are the node itself, as one group


class _PrefixTree:
    """The block trie of the live requests, as lcp intervals of their sorted rows.

    The rows are sorted by their bytes: any order keeps rows with a common prefix
    adjacent. A row shorter than the widest gets a sentinel in its first cell past its
    cap, so it sorts apart from rows that share more than its cap (the cells after that
    one never matter). ``lcp[i]``, the leading blocks rows ``i`` and ``i + 1`` share, is
    their first differing column, capped by both caps.
    """

    def __init__(self, table: np.ndarray, cap: np.ndarray, live: np.ndarray) -> None:
        caps = cap[live]
        width = int(caps.max())
        rows = _marked_rows(table, caps, live, width)
        packed = rows.view(np.dtype((np.void, rows.itemsize * width)))[:, 0]
        order = np.argsort(packed)
        rows, caps = rows[order], caps[order]
        differ = rows[1:] != rows[:-1]
        first = differ.argmax(axis=1)
        first[~differ[np.arange(first.size), first]] = width
        lcp = np.minimum(first, np.minimum(caps[1:], caps[:-1]))
        self.requests: list[int] = live[order].tolist()
        self.root = _lcp_intervals(lcp)

    def members(self, node: _Node) -> tuple[int, ...]:
        return tuple(sorted(self.requests[node.lo : node.hi]))


def _marked_rows(table: np.ndarray, caps: np.ndarray, live: np.ndarray, width: int) -> np.ndarray:
    """The live rows cut at ``width``, each short row's first cell past its cap marked.

    The mark is the dtype's minimum, which no id of the rows may equal; integer ids
    otherwise, and ids of other dtypes, are replaced by their ranks first. A view of
    ``table`` when nothing needs marking (no copy); the last axis is contiguous.
    """
    short = np.flatnonzero(caps < width)
    if live.size == table.shape[0] and not short.size:
        rows = table[:, :width]
    else:
        rows = table[live, :width]
    if rows.dtype.kind not in "iu":
        rows = _ranks(rows)  # equal floats may differ in their bytes (-0.0 and 0.0)
    if short.size:
        if rows.dtype.kind != "i" or rows.min() == np.iinfo(rows.dtype).min:
            rows = _ranks(rows)
        rows[short, caps[short]] = np.iinfo(rows.dtype).min
    if rows.strides[-1] != rows.itemsize:
        rows = np.ascontiguousarray(rows)
    return rows


def _ranks(rows: np.ndarray) -> np.ndarray:
    """``rows`` as int64 ranks of their values: same equalities, the minimum left free."""
    _, inverse = np.unique(rows, return_inverse=True)
    return inverse.reshape(rows.shape).astype(np.int64) + 1


def _lcp_intervals(lcp: np.ndarray) -> _Node:
    """The root (depth 0, all rows) of the lcp-interval tree of ``lcp.size + 1`` rows.

    One pass with a stack of open intervals over the places where ``lcp`` changes (an
    equal value changes nothing); rows that share nothing with a neighbour are leaves
    and get no node (a group needs two requests).
    """
    closing = np.concatenate((lcp, [0]))
    starts = np.flatnonzero(closing[1:] != closing[:-1]) + 1
    starts = np.concatenate(([0], starts))
    root = _Node(0, 0)
    stack = [root]
    for i, shared in zip(starts.tolist(), closing[starts].tolist()):
        lo = i
        closed: _Node | None = None
        while shared < stack[-1].depth:
            closed = stack.pop()
            closed.hi = i + 1
            lo = closed.lo
            if shared <= stack[-1].depth:
                stack[-1].children.append(closed)
                closed = None
        if shared > stack[-1].depth:
            node = _Node(lo, shared)
            if closed is not None:
                node.children.append(closed)
            stack.append(node)
    root.hi = lcp.size + 1
    return root


def _best_groups(tree: _PrefixTree, config: ForestConfig) -> list[PrefixGroup]:
    """Per node, one group or its children's best groups, whichever saves more reads.

    A node whose depth exceeds its nearest grouped ancestor's (the batch counts as 0)
    by less than ``min_additional_prefix_blocks`` may not be one group; a tie keeps the
    node whole. Nodes of fewer than ``min_group_size`` requests are never looked at.
    """
    smallest = config.min_group_size
    # Top-down: which nodes may be one group (it depends on the grouped ancestors).
    visited: list[tuple[_Node, bool]] = []
    pending = [(child, 0) for child in tree.root.children]
    while pending:
        node, parent_blocks = pending.pop()
        if node.hi - node.lo < smallest:
            continue
        allowed = node.depth - parent_blocks >= config.min_additional_prefix_blocks
        visited.append((node, allowed))
        below = node.depth if allowed else parent_blocks
        pending.extend((child, below) for child in node.children)
    # Bottom-up (children before parents): the better of whole and split.
    for node, allowed in reversed(visited):
        deeper = sum(child.saved for child in node.children)
        one = (node.hi - node.lo - 1) * node.depth if allowed else 0
        node.whole = allowed and one >= deeper
        node.saved = max(one, deeper)
    # Top-down again: the whole nodes below split ones (a split node saves > 0).
    groups: list[PrefixGroup] = []
    pending = list(tree.root.children)
    while pending:
        node = pending.pop()
        if node.whole:
            groups.append(PrefixGroup(tree.members(node), node.depth))
        elif node.saved > 0:
            pending.extend(node.children)
    return groups
