"""Builder-side forest state: static eligibility once, then a plan per step.

The metadata builder of the fork owns one :class:`ForestPlanner` (None when the
feature is off). Per step it takes vLLM's ``CommonAttentionMetadata``, applies the
eligibility rules, groups the block table and builds the plan; any ``None`` means the
step runs the upstream path unchanged.

Full CUDA graphs: a step replayed from a full graph never runs the attention layers in
Python, so a plan would be ignored there. In an engine with full graphs the model
runner asks :meth:`ForestPlanner.would_group` before it picks the step's graph mode
(:mod:`.dispatch`); a step that will be grouped is run with piecewise graphs, as vLLM
does for its own cascade attention, and marked, and only a marked step is planned.
Steps that do not group keep their full graphs.

Static plans (forest config ``full_cuda_graphs``, :mod:`.static_plan`): in an engine
whose decode steps run full CUDA graphs and whose mixed steps do not, every
single-token decode batch up to the buffers' capacity gets a plan of static shapes in
persistent buffers, grouped or not (the capture run's batch gets one with nothing
grouped), so the uniform-decode full graphs hold the forest kernels and replay them on
every decode step; the runner keeps those steps on their full graphs. Other steps take
the path above.

Host inputs: query lengths come from ``query_start_loc_cpu`` and computed tokens from
``seq_lens_cpu_upper_bound`` (exact without speculative decoding, which is therefore
ineligible). The block table comes from the model runner's host copy
(:mod:`.host_tables`); only a table that is not found there is copied back from the
device, which waits for queued GPU work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from arctic_inference.vllm.attention.forest_config import ForestConfig, forest_config_for
from arctic_inference.vllm.attention.grouping import (
    ForestGrouping,
    find_prefix_groups,
    ineligible_reason,
)
from arctic_inference.vllm.attention.plan import ForestPlan, build_forest_plan
from arctic_inference.vllm.attention.static_plan import StaticPlanBuffers, static_host_index

__all__ = ["STATS", "ForestPlanner", "static_capacity"]

logger = logging.getLogger(__name__)

#: Process-wide counts (tests and the bench read them): grouped ("planned") and
#: ungrouped ("skipped") steps; static plans built, those of steps the runner dispatched
#: to a full CUDA graph ("static_full"), and the grouped ones of each; forest forwards
#: run from Python ("forward_calls", one per layer: a replayed graph runs none).
STATS: dict[str, int] = {
    "planned": 0,
    "skipped": 0,
    "host_table": 0,
    "device_copy": 0,
    "static": 0,
    "static_grouped": 0,
    "static_full": 0,
    "static_full_grouped": 0,
    "forward_calls": 0,
}


def static_capacity(
    config: ForestConfig,
    *,
    cudagraph_mode: Any,
    max_cudagraph_size: int | None,
    max_num_seqs: int,
) -> int | None:
    """The largest batch planned statically, None when static plans are off.

    On only when asked and when the engine's decode steps run full graphs while its
    mixed steps do not (``FULL_AND_PIECEWISE``, ``FULL_DECODE_ONLY``): then full graphs
    are captured only for uniform decode batches, the shape static plans serve. With
    ``FULL`` the mixed graphs would be captured with a decode-shaped plan.
    """
    if not config.full_cuda_graphs or not max_cudagraph_size or cudagraph_mode is None:
        return None
    if cudagraph_mode.decode_mode().name != "FULL" or cudagraph_mode.mixed_mode().name == "FULL":
        return None
    return max(int(max_num_seqs), int(max_cudagraph_size))


class ForestPlanner:
    """Decides per step whether and how the batch is grouped."""

    def __init__(
        self,
        config: ForestConfig,
        *,
        block_size: int,
        dcp_world_size: int,
        full_cuda_graph: bool,
        sliding_window: bool,
        speculative: bool,
        static_capacity: int | None = None,
    ) -> None:
        self.config = config
        self.block_size = block_size
        self.dcp_world_size = dcp_world_size
        self.full_cuda_graph = full_cuda_graph
        self.sliding_window = sliding_window
        self.speculative = speculative
        self.last_reason: str | None = None  # why the last step was not grouped
        # Full-graph engines: the request count of the step the runner dispatched
        # with piecewise graphs because it will be grouped (see the module doc).
        self.marked_reqs: int | None = None
        # Static plans: None when off (never grouped layers get none either).
        ineligible = dcp_world_size > 1 or sliding_window or speculative
        self.static = (
            StaticPlanBuffers(static_capacity)
            if static_capacity is not None and full_cuda_graph and not ineligible
            else None
        )
        # Padded token count of the step the runner dispatched to a full graph.
        self.noted_full_tokens: int | None = None

    @classmethod
    def for_builder(cls, builder: Any) -> ForestPlanner | None:
        """The planner of a FlashAttention metadata builder, None when forest is off."""
        config = forest_config_for(builder.vllm_config)
        if config is None:
            return None
        spec = builder.kv_cache_spec
        vllm_config = builder.vllm_config
        planner = cls(
            config,
            block_size=builder.block_size,
            dcp_world_size=builder.dcp_world_size,
            full_cuda_graph=bool(builder.use_full_cuda_graph),
            sliding_window=getattr(spec, "sliding_window", None) is not None
            or getattr(spec, "attention_chunk_size", None) is not None,
            speculative=vllm_config.speculative_config is not None,
            static_capacity=static_capacity(
                config,
                cudagraph_mode=vllm_config.compilation_config.cudagraph_mode,
                max_cudagraph_size=vllm_config.compilation_config.max_cudagraph_capture_size,
                max_num_seqs=vllm_config.scheduler_config.max_num_seqs,
            ),
        )
        if config.full_cuda_graphs and planner.static is None:
            logger.warning(
                "forest: full_cuda_graphs is on, but this engine gets no static plans (they "
                "need full decode graphs apart from the mixed ones, e.g. FULL_AND_PIECEWISE, "
                "and no speculative decoding, decode context parallelism or sliding window); "
                "grouped steps run piecewise."
            )
        elif config.full_cuda_graphs:
            logger.warning(
                "forest: full_cuda_graphs is experimental: on the H200 its greedy outputs "
                "diverged from FLASH_ATTN more than forest's piecewise path does (see the "
                "README); do not serve with it yet."
            )
        return planner

    def _reason(
        self, *, num_reqs: int, max_query_len: int, causal: object, full_graph_step: bool
    ) -> str | None:
        reason = ineligible_reason(
            num_reqs=num_reqs,
            max_query_len=max_query_len,
            causal=causal,
            dcp_world_size=self.dcp_world_size,
            full_cuda_graph=full_graph_step,
            sliding_window=self.sliding_window,
            config=self.config,
        )
        if reason is None and self.speculative:
            reason = "speculative decoding (computed tokens are only an upper bound)"
        return reason

    def would_group(
        self, query_lens: np.ndarray, computed: np.ndarray, block_table_cpu: np.ndarray
    ) -> bool:
        """Whether a step with these host inputs will be grouped (the runner's question)."""
        num_reqs = int(query_lens.shape[0])
        max_query_len = int(query_lens.max(initial=0))
        # The question is whether it would group when run with piecewise graphs.
        reason = self._reason(
            num_reqs=num_reqs, max_query_len=max_query_len, causal=True, full_graph_step=False
        )
        if reason is not None:
            return False
        computed = np.asarray(computed, dtype=np.int64)
        grouping, _, _ = self._groups(
            computed, lambda columns: block_table_cpu[:num_reqs, :columns]
        )
        return grouping is not None

    def mark_step(self, num_reqs: int) -> None:
        """The runner dispatched this step with piecewise graphs so that it can be grouped."""
        self.marked_reqs = num_reqs

    def static_serves(self, query_lens: np.ndarray) -> bool:
        """Whether a step with these query lengths gets a static plan (the runner's question:
        such a step keeps its full graph, which holds the forest kernels)."""
        lens = np.asarray(query_lens)
        return self.static is not None and self.static.serves(
            num_tokens=int(lens.sum()),
            num_reqs=int(lens.shape[0]),
            max_query_len=int(lens.max(initial=0)),
        )

    def note_step(self, *, full_graph: bool, num_tokens: int) -> None:
        """The runner's graph mode for the coming step (counted in ``STATS`` only)."""
        self.noted_full_tokens = num_tokens if full_graph else None

    def plan(self, common: Any) -> ForestPlan | None:
        """The plan for one step's ``CommonAttentionMetadata``, or None (upstream path)."""
        if self.static is not None and self.static.serves(
            num_tokens=common.num_actual_tokens,
            num_reqs=common.num_reqs,
            max_query_len=common.max_query_len,
        ):
            return self._static_plan(common)
        marked, self.marked_reqs = self.marked_reqs, None
        reason = self._reason(
            num_reqs=common.num_reqs,
            max_query_len=common.max_query_len,
            causal=common.causal,
            full_graph_step=self.full_cuda_graph and marked != common.num_reqs,
        )
        host_lens = common.seq_lens_cpu_upper_bound
        if reason is None and (host_lens is None or host_lens.shape[0] < common.num_reqs):
            reason = "no host copy of the sequence lengths"
        if reason is not None:
            return self._skip(reason)
        num_reqs = common.num_reqs
        # Slicing after .numpy(): a numpy slice costs a tenth of a torch one.
        qsl = common.query_start_loc_cpu.numpy()[: num_reqs + 1].astype(np.int64)
        seq_lens = common.seq_lens_cpu_upper_bound.numpy()[:num_reqs].astype(np.int64)
        computed = seq_lens - (qsl[1:] - qsl[:-1])
        grouping, table_cpu, reason = self._groups(
            computed, lambda columns: self._host_rows(common.block_table_tensor, num_reqs, columns)
        )
        if grouping is None:
            return self._skip(reason)
        self.last_reason = None
        STATS["planned"] += 1
        return build_forest_plan(
            grouping,
            query_start_loc_cpu=qsl,
            block_table_cpu=table_cpu,
            block_table=common.block_table_tensor,
            seq_lens=common.seq_lens,
            max_seq_len=common.max_seq_len,
            block_size=self.block_size,
        )

    def _static_plan(self, common: Any) -> ForestPlan:
        """A static plan of the step's padded shape, grouped when the step groups.

        Every step of a served shape gets one, also steps that do not group (their
        graph holds the forest kernels all the same). Grouping reads the real requests
        only: the runner's padding requests come last and have no query tokens.
        """
        num_reqs, num_tokens = common.num_reqs, common.num_actual_tokens
        qsl = common.query_start_loc_cpu.numpy()[: num_reqs + 1].astype(np.int64)
        real = int(np.searchsorted(qsl, qsl[-1], side="left"))
        grouping = None
        reason = self._reason(
            num_reqs=real,
            max_query_len=common.max_query_len,
            causal=common.causal,
            full_graph_step=False,
        )
        host_lens = common.seq_lens_cpu_upper_bound
        if reason is None and (host_lens is None or host_lens.shape[0] < real):
            reason = "no host copy of the sequence lengths"
        if reason is None:
            seq_lens = host_lens.numpy()[:real].astype(np.int64)
            computed = seq_lens - (qsl[1 : real + 1] - qsl[:real])
            grouping, _, reason = self._groups(
                computed,
                lambda columns: self._host_rows(common.block_table_tensor, real, columns),
            )
        full = self.noted_full_tokens == num_tokens
        self.noted_full_tokens = None
        STATS["static"] += 1
        STATS["static_full"] += full
        if grouping is None:
            self._skip(reason)
        else:
            self.last_reason = None
            STATS["planned"] += 1
            STATS["static_grouped"] += 1
            STATS["static_full_grouped"] += full
        host = static_host_index(
            grouping, qsl, num_tokens=num_tokens, num_reqs=num_reqs, block_size=self.block_size
        )
        assert self.static is not None
        return self.static.fill(
            host,
            block_table=common.block_table_tensor,
            seq_lens=common.seq_lens,
            max_seq_len=common.max_seq_len,
            num_groups=0 if grouping is None else len(grouping.groups),
        )

    def replan(self, plan: ForestPlan | None, metadata: Any) -> ForestPlan | None:
        """The plan after ``update_block_table`` swapped in another KV-cache group's table.

        A dynamic plan is dropped (it was grouped on the other table). A static one is
        this builder's graph input, so this builder's buffers are filled for the new
        table, with nothing grouped (the other table's groups need not hold here).
        """
        self.noted_full_tokens = None
        if plan is None or not plan.static or self.static is None:
            return None
        num_reqs = int(metadata.seq_lens.shape[0])
        host = static_host_index(
            None,
            np.zeros(num_reqs + 1, dtype=np.int64),
            num_tokens=int(metadata.num_actual_tokens),
            num_reqs=num_reqs,
            block_size=self.block_size,
        )
        STATS["static"] += 1
        return self.static.fill(
            host,
            block_table=metadata.block_table,
            seq_lens=metadata.seq_lens,
            max_seq_len=metadata.max_seq_len,
            num_groups=0,
        )

    def _groups(
        self, computed: np.ndarray, table_rows: Callable[[int], np.ndarray]
    ) -> tuple[ForestGrouping | None, np.ndarray | None, str]:
        """The groups of a step from its computed tokens and ``table_rows(columns)``.

        One body for the runner's question (:meth:`would_group`) and the builder's plan,
        so the two cannot drift apart. The string says why there are none.
        """
        columns = int(computed.max(initial=0)) // self.block_size
        if columns < 1:
            return None, None, "no fully computed block"
        table = table_rows(columns)
        grouping = find_prefix_groups(table, computed, self.block_size, self.config)
        return grouping, table, "no prefix groups worth grouping"

    @staticmethod
    def _host_rows(device_table: Any, num_reqs: int, columns: int) -> np.ndarray:
        """The first ``num_reqs`` rows, ``columns`` wide, of the step's block table."""
        from arctic_inference.vllm.attention.host_tables import host_block_table

        host = host_block_table(device_table)
        if host is not None:
            STATS["host_table"] += 1
            return host.numpy()[:num_reqs, :columns]
        STATS["device_copy"] += 1
        return device_table[:num_reqs, :columns].to("cpu").numpy()

    def _skip(self, reason: str) -> None:
        self.last_reason = reason
        STATS["skipped"] += 1
        return None
