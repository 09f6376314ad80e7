"""Graph modes of forest steps: piecewise for grouped steps, full for the rest (or static plans).

A step replayed from a full CUDA graph runs no attention layer in Python, so forest
attention cannot run inside one. vLLM 0.26.0 picks each step's graph mode in
``GPUModelRunner._determine_batch_execution_and_padding`` and, for its own cascade
attention, rules full graphs out for that step (``use_cascade_attn``). The patch does
the same for forest: before the mode is picked it asks each forest planner whether the
step will be grouped (from the host copies of the step's query lengths, computed
tokens and block table, the inputs the builder will group), and if one will, it rules
full graphs out for the step and marks the planner, which then plans it. Every other
step keeps its full graph, so an engine with full graphs loses nothing on batches
without shared prefixes.

Static plans (forest config ``full_cuda_graphs``): the uniform-decode full graphs hold
the forest kernels (:mod:`.static_plan`), so a step a planner plans statically is not
asked and keeps its full graph; after the decision each static planner is told the
step's graph mode (for ``STATS``). Steps of other shapes are asked as above.

Only real steps are asked: the dummy and capture runs pass the ``force_*`` arguments,
and an engine without full graphs (or without forest) takes vLLM's code as is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from vllm.v1.worker.gpu_model_runner import GPUModelRunner

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.attention.planner import ForestPlanner

__all__ = ["ForestStepDispatchPatch", "forest_planners", "mark_forest_step", "note_forest_step"]


def forest_planners(runner: Any) -> Iterator[tuple[int, ForestPlanner]]:
    """(KV-cache group, planner) of every metadata builder that plans forest in full-graph mode."""
    for kv_cache_gid, groups in enumerate(getattr(runner, "attn_groups", None) or ()):
        for group in groups:
            planner = getattr(group.get_metadata_builder(), "forest", None)
            if isinstance(planner, ForestPlanner) and planner.full_cuda_graph:
                yield kv_cache_gid, planner


def mark_forest_step(runner: Any, num_reqs: int, query_lens: np.ndarray) -> bool:
    """Mark the planners that will group this step; whether any will (see the module doc)."""
    computed = runner.input_batch.num_computed_tokens_cpu[:num_reqs]
    tables = runner.input_batch.block_table
    marked = False
    for kv_cache_gid, planner in forest_planners(runner):
        if planner.static_serves(query_lens[:num_reqs]):
            continue  # planned statically: its full graph holds the forest kernels
        host_table = tables[kv_cache_gid].block_table.np
        if planner.would_group(query_lens[:num_reqs], computed, host_table):
            planner.mark_step(num_reqs)
            marked = True
    return marked


def note_forest_step(runner: Any, mode: Any, batch_descriptor: Any) -> None:
    """Tell the static planners the graph mode the runner picked for this step."""
    full = getattr(mode, "name", None) == "FULL"
    num_tokens = int(getattr(batch_descriptor, "num_tokens", -1))
    for _, planner in forest_planners(runner):
        if planner.static is not None:
            planner.note_step(full_graph=full, num_tokens=num_tokens)


# rebasekit: ignore[RK401] the plugin forces the V1 runner (runner_choice.force_v1_model_runner)
class ForestStepDispatchPatch(ArcticPatch[GPUModelRunner]):
    """Rule full graphs out for the steps forest will group."""

    _orig__determine_batch_execution_and_padding = (
        GPUModelRunner._determine_batch_execution_and_padding
    )

    def _determine_batch_execution_and_padding(
        self,
        num_tokens,
        num_reqs,
        num_scheduled_tokens_np,
        max_num_scheduled_tokens,
        use_cascade_attn,
        allow_microbatching=True,
        force_eager=False,
        force_uniform_decode=None,
        force_has_lora=None,
        force_num_active_loras=None,
        num_encoder_reqs=0,
    ):
        real_step = (
            not force_eager
            and force_uniform_decode is None
            and force_has_lora is None
            and force_num_active_loras is None
        )
        if real_step and not use_cascade_attn:
            use_cascade_attn = mark_forest_step(self, num_reqs, num_scheduled_tokens_np)
        decision = ForestStepDispatchPatch._orig__determine_batch_execution_and_padding(
            self,
            num_tokens,
            num_reqs,
            num_scheduled_tokens_np,
            max_num_scheduled_tokens,
            use_cascade_attn,
            allow_microbatching=allow_microbatching,
            force_eager=force_eager,
            force_uniform_decode=force_uniform_decode,
            force_has_lora=force_has_lora,
            force_num_active_loras=force_num_active_loras,
            num_encoder_reqs=num_encoder_reqs,
        )
        if real_step and isinstance(decision, tuple) and len(decision) >= 2:
            note_forest_step(self, decision[0], decision[1])
        return decision
