"""A forest plan of static shapes in persistent buffers, so full CUDA graphs can hold it.

A captured graph replays its kernels with the addresses and host integers of capture
time. A plan it can replay therefore has to (1) keep every tensor at the same address
for a given padded batch, (2) give every tensor a shape fixed by the padded batch alone,
not by the grouping, and (3) pass the kernels host integers that bound every batch of
that size. The trick that makes (2) possible: every query token belongs to exactly one
prefix virtual sequence. A group's tokens form its group's sequence; every other token
(ungrouped requests and the runner's padding tokens) sits in one sequence with no KV.
FlashAttention over an empty KV gives output 0 and an LSE of -inf (FA2 says +inf, which
``merge_attn_states`` reads as -inf), and the LSE merge with -inf is the identity on the
suffix result, so ungrouped tokens need no path of their own. Then, for ``R`` padded
requests and ``T`` padded tokens:

* prefix call: ``T`` gathered query rows, ``R + 1`` cumulative query lengths (groups,
  then the one empty-KV sequence, then sequences of no tokens), ``R`` KV lengths, an
  ``(R, width)`` block table (a group's row is its first member's block-table row; the
  kernel reads only the group's shared blocks), ``max_seqlen_q = T``;
* suffix call: the runner's own query offsets, ``R`` KV lengths and the ``(R, width)``
  block table shifted left by each request's group prefix, as in the dynamic plan.

Host bounds, as vLLM's FlashAttention builder sets them for its full decode graphs: the
KV bound is the step's ``max_seq_len`` (``max_model_len`` in the capture run), the split
count is the builder's ``max_num_splits`` (fixed for steps that fit a captured graph), and
the forest calls pass no AOT scheduler metadata, so FA3 schedules them inside the call
(inside the graph) from the device lengths.

Per step the host writes the small index arrays (one pinned host-to-device copy into
a persistent staging buffer, views of which are the plan's index tensors) and a few
device ops write the block tables and KV lengths into persistent buffers, all before
the graph replays. Buffers are allocated once, at the largest batch they serve.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import torch

from arctic_inference.vllm.attention.grouping import ForestGrouping
from arctic_inference.vllm.attention.plan import ForestPlan

__all__ = ["StaticHostIndex", "StaticPlanBuffers", "static_host_index"]


@dataclasses.dataclass(frozen=True)
class StaticHostIndex:
    """The host arrays of one static plan; shapes depend on ``(T, R)`` only."""

    token_index: np.ndarray  # (T,) int64: token rows in virtual-sequence order
    prefix_rows: np.ndarray  # (R,) int64: block-table row of each virtual sequence
    shift_blocks: np.ndarray  # (R,) int64: blocks each request reads through its group
    cu_seqlens: np.ndarray  # (R + 1,) int32
    prefix_kv: np.ndarray  # (R,) int32: KV tokens of each virtual sequence
    shift_tokens: np.ndarray  # (R,) int32: ``shift_blocks * block_size``

    def packed(self) -> np.ndarray:
        """One int64 array: the int64 arrays, then the int32 ones two to a slot."""
        small = np.concatenate([self.cu_seqlens, self.prefix_kv, self.shift_tokens])
        if small.size % 2:
            small = np.concatenate([small, np.zeros(1, dtype=np.int32)])
        big = np.concatenate([self.token_index, self.prefix_rows, self.shift_blocks])
        return np.concatenate([big, small.astype(np.int32).view(np.int64)])


def static_host_index(
    grouping: ForestGrouping | None,
    query_start_loc_cpu: np.ndarray,
    *,
    num_tokens: int,
    num_reqs: int,
    block_size: int,
) -> StaticHostIndex:
    """The host arrays for ``num_reqs`` padded requests and ``num_tokens`` padded tokens.

    ``grouping`` (None: nothing grouped) covers the first ``grouping.num_reqs`` requests;
    ``query_start_loc_cpu`` has ``num_reqs + 1`` entries (padding requests repeat the end).
    """
    qsl = np.asarray(query_start_loc_cpu, dtype=np.int64)[: num_reqs + 1]
    groups = grouping.groups if grouping is not None else ()
    count = len(groups)
    if count + 1 > num_reqs + 1 or qsl.shape[0] != num_reqs + 1 or qsl[-1] > num_tokens:
        raise ValueError(
            f"static forest plan: {count} groups, {qsl.shape[0]} query offsets and "
            f"{int(qsl[-1])} query tokens do not fit {num_reqs} requests of {num_tokens} tokens."
        )
    members = np.fromiter(itertools.chain.from_iterable(g.requests for g in groups), np.int64)
    sizes = np.fromiter((len(g.requests) for g in groups), np.int64, count=count)
    group_blocks = np.fromiter((g.prefix_blocks for g in groups), np.int64, count=count)
    starts = qsl[members]
    lens = qsl[members + 1] - starts
    ends = np.cumsum(lens)
    grouped = np.arange(int(ends[-1]) if ends.size else 0, dtype=np.int64)
    grouped += np.repeat(starts - (ends - lens), lens)
    in_group = np.zeros(num_tokens, dtype=bool)
    in_group[grouped] = True
    token_index = np.concatenate([grouped, np.flatnonzero(~in_group)]).astype(np.int64)

    cu = np.full(num_reqs + 1, num_tokens, dtype=np.int32)
    cu[0] = 0
    cu[1 : count + 1] = ends[np.cumsum(sizes) - 1]
    prefix_kv = np.zeros(num_reqs, dtype=np.int32)
    prefix_kv[:count] = group_blocks * block_size
    prefix_rows = np.zeros(num_reqs, dtype=np.int64)
    prefix_rows[:count] = [g.requests[0] for g in groups]
    shift_blocks = np.zeros(num_reqs, dtype=np.int64)
    shift_blocks[members] = np.repeat(group_blocks, sizes)
    return StaticHostIndex(
        token_index=token_index,
        prefix_rows=prefix_rows,
        shift_blocks=shift_blocks,
        cu_seqlens=cu,
        prefix_kv=prefix_kv,
        shift_tokens=(shift_blocks * block_size).astype(np.int32),
    )


class StaticPlanBuffers:
    """The persistent device buffers of static plans for batches up to ``capacity``.

    Allocated at the first fill (the block table's device and width are known then);
    a later block table of another width or device is an error, since graphs captured
    on the first buffers would read stale data.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._width: int | None = None
        self._device: torch.device | None = None

    def serves(self, *, num_tokens: int, num_reqs: int, max_query_len: int) -> bool:
        """Whether a batch of this shape is planned statically: single-token decode
        batches (the shape of vLLM's uniform-decode full graphs) up to the capacity.

        A function of the padded shape alone, so a captured graph and every replay of
        it agree on whether the forest kernels are in it.
        """
        return max_query_len == 1 and num_tokens == num_reqs and 1 <= num_reqs <= self.capacity

    def _allocate(self, device: torch.device, width: int) -> None:
        cap = self.capacity
        slots = cap + 2 * cap + -(-(3 * cap + 1) // 2)
        self.staging = torch.zeros(slots, dtype=torch.int64, device=device)
        self.prefix_table = torch.zeros((cap, width), dtype=torch.int32, device=device)
        self.suffix_table = torch.zeros((cap, width), dtype=torch.int32, device=device)
        self.columns = torch.zeros((cap, width), dtype=torch.int64, device=device)
        self.suffix_seqused = torch.zeros(cap, dtype=torch.int32, device=device)
        self.arange = torch.arange(width, dtype=torch.int64, device=device)
        self._width, self._device = width, device

    def fill(
        self,
        host: StaticHostIndex,
        *,
        block_table: torch.Tensor,
        seq_lens: torch.Tensor,
        max_seq_len: int,
        num_groups: int,
    ) -> ForestPlan:
        """Write one step's plan into the buffers; the plan's tensors are views of them."""
        num_tokens, num_reqs = host.token_index.shape[0], host.prefix_rows.shape[0]
        width, device = int(block_table.shape[1]), block_table.device
        if num_reqs > self.capacity or num_tokens > self.capacity:
            raise ValueError(
                f"static forest plan of {num_reqs} requests and {num_tokens} tokens exceeds "
                f"the buffers' capacity {self.capacity}."
            )
        if self._width is None:
            self._allocate(device, width)
        elif (width, device) != (self._width, self._device):
            raise RuntimeError(
                f"static forest plan: block table of width {width} on {device}, buffers "
                f"were made for width {self._width} on {self._device}."
            )
        flat = torch.from_numpy(host.packed())
        staging = self.staging[: flat.shape[0]]
        if device.type == "cuda":
            staging.copy_(flat.pin_memory(), non_blocking=True)
        else:
            staging.copy_(flat)
        t, r = num_tokens, num_reqs
        token_index = self.staging[:t]
        rows = self.staging[t : t + r]
        shift = self.staging[t + r : t + 2 * r]
        small = self.staging[t + 2 * r :].view(torch.int32)
        cu, prefix_kv, shift_tokens = (
            small[: r + 1],
            small[r + 1 : 2 * r + 1],
            small[2 * r + 1 : 3 * r + 1],
        )

        prefix_table = self.prefix_table[:r]
        torch.index_select(block_table[:r], 0, rows, out=prefix_table)
        # Columns past a row's end repeat its last entry: the kernel reads only the
        # blocks that the suffix KV lengths cover.
        columns = self.columns[:r]
        torch.add(self.arange[None, :], shift[:, None], out=columns)
        columns.clamp_(max=width - 1)
        suffix_table = self.suffix_table[:r]
        torch.gather(block_table[:r], 1, columns, out=suffix_table)
        suffix_seqused = self.suffix_seqused[:r]
        torch.sub(seq_lens[:r], shift_tokens, out=suffix_seqused)
        return ForestPlan(
            num_groups=num_groups,
            prefix_token_index=token_index,
            prefix_cu_seqlens_q=cu,
            prefix_seqused_k=prefix_kv,
            prefix_block_table=prefix_table,
            max_prefix_query_len=num_tokens,
            max_prefix_kv_len=int(max_seq_len),
            suffix_block_table=suffix_table,
            suffix_seqused_k=suffix_seqused,
            max_suffix_kv_len=int(max_seq_len),
            static=True,
        )
