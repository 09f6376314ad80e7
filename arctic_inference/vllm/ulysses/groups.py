"""The sequence-parallel process groups of this worker and the layout of the current step.

Set up once per worker by the patched ``initialize_model_parallel``
(:mod:`.worker_patches`); read by the attention and model-runner patches.
vLLM's own ``get_tp_group()`` answers the SP layout's TP group, except inside
a FOLDED step, when it answers the folded group (:func:`step`), so every
vLLM layer reduces over the group of the layout the step runs in.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

from arctic_inference.vllm.ulysses.layout import ParallelLayout
from arctic_inference.vllm.ulysses.shift import StepMode


@dataclasses.dataclass
class SequenceParallelGroups:
    """This worker's groups (vLLM ``GroupCoordinator`` objects)."""

    layout: ParallelLayout
    sp: Any  # the all-to-all peers
    tp: Any  # TP of the SP layout: vLLM's TP group outside FOLDED steps
    folded: Any  # TP over the SP x TP block, TP-major
    mode: StepMode = StepMode.SP


_groups: SequenceParallelGroups | None = None


def install(groups: SequenceParallelGroups | None) -> None:
    global _groups
    _groups = groups


def current() -> SequenceParallelGroups | None:
    """This worker's groups, or ``None`` when it runs without SP."""
    return _groups


def current_mode() -> StepMode | None:
    return None if _groups is None else _groups.mode


@contextlib.contextmanager
def step(mode: StepMode) -> Iterator[None]:
    """Run one engine step in ``mode``: vLLM's TP group follows the layout."""
    from vllm.distributed import parallel_state

    groups = _groups
    if groups is None:
        yield
        return
    before = (groups.mode, parallel_state._TP)
    groups.mode = mode
    parallel_state._TP = groups.folded if mode is StepMode.FOLDED else groups.tp
    try:
        yield
    finally:
        groups.mode, parallel_state._TP = before


@contextlib.contextmanager
def sp_layout_tp() -> Iterator[None]:
    """Inside a step, hand vLLM's layers the SP layout's TP group (for a layer that
    keeps its TP layout in a FOLDED step)."""
    from vllm.distributed import parallel_state

    groups = _groups
    if groups is None:
        yield
        return
    before = parallel_state._TP
    parallel_state._TP = groups.tp
    try:
        yield
    finally:
        parallel_state._TP = before


@contextlib.contextmanager
def capture(mode: StepMode) -> Iterator[None]:
    """Around the capture of one CUDA graph in ``mode``.

    vLLM's ``graph_capture`` readies the TP group that is current when capture
    starts, the SP layout's: its custom all-reduce records the buffers a graph
    reads and registers them with its peers when the context closes (without
    that, a replay reads unset peer pointers). A FOLDED graph all-reduces over
    the folded group instead, so that group is readied here, for one capture at
    a time: every rank of it captures the same sizes in the same order, so the
    registrations pair up. The SP group needs nothing: its all-to-all and its
    gather are plain NCCL calls.
    """
    sp_groups = _groups
    folded = None if sp_groups is None else sp_groups.folded
    if (
        folded is None
        or mode is not StepMode.FOLDED
        or getattr(folded.device_communicator, "ca_comm", None) is None
    ):
        yield
        return
    import torch
    from vllm.distributed.parallel_state import GraphCaptureContext

    with folded.graph_capture(GraphCaptureContext(torch.cuda.current_stream())):
        yield
