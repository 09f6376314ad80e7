"""CUDA graphs of the speculator's proposal loop, one per padded batch size and draft length.

A proposal for a few requests is a few dozen tiny kernels (per drafted token:
projection, embedding, norm, activation, head, argmax); launched one by one
from Python they cost more than they compute (about 1 ms per step for three
MLP heads on the H200, eager). Replaying a captured graph launches them all at
once. A graph is captured the first time a (padded batch size, draft length)
pair is asked for, all into one memory pool; a batch is padded up to the next
capture size and the padded rows' drafts are dropped (their inputs are
whatever the buffers last held: finite values, results unused).

Graphs are used only where vLLM itself uses CUDA graphs (not with
``enforce_eager`` or ``cudagraph_mode`` NONE), with tensor parallelism 1 (the
sharded greedy step gathers across ranks, and every rank would have to capture
and replay in lock step), and for CUDA tensors. Everything else, a batch
larger than the largest size, or a capture that fails runs the eager loop; a
failed capture turns graphs off for the engine, with one warning.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch
from vllm.logger import init_logger

logger = init_logger(f"vllm.{__name__}")

CAPTURE_SIZES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def padded_size(batch: int, sizes: Sequence[int]) -> int | None:
    """The smallest capture size that holds ``batch`` rows (``None``: none is large enough)."""
    i = bisect.bisect_left(sizes, batch)
    return sizes[i] if i < len(sizes) else None


def graphs_wanted(vllm_config: Any) -> bool:
    """Whether the engine runs with CUDA graphs and one tensor-parallel rank."""
    if vllm_config.model_config.enforce_eager:
        return False
    if vllm_config.parallel_config.tensor_parallel_size != 1:
        return False
    mode = getattr(vllm_config.compilation_config, "cudagraph_mode", None)
    return mode is None or getattr(mode, "name", str(mode)) != "NONE"


@dataclasses.dataclass
class CapturedProposal:
    """One graph and the static tensors it reads and writes."""

    graph: Any
    tokens: torch.Tensor  # [size] long
    hidden: torch.Tensor  # [size, H]
    drafts: torch.Tensor  # [size, n] long


class GraphedProposals:
    """``generate_proposals`` through captured graphs where they apply, eagerly elsewhere."""

    def __init__(
        self,
        propose: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor],
        *,
        enabled: bool,
        sizes: Sequence[int] = CAPTURE_SIZES,
        capture: Callable[..., CapturedProposal] | None = None,
        on_device: Callable[[torch.Tensor], bool] = lambda t: t.is_cuda,
    ) -> None:
        self.propose = propose
        self.enabled = enabled
        self.sizes = tuple(sorted(sizes))
        self.graphs: dict[tuple[int, int], CapturedProposal] = {}
        self._capture_fn = capture or self._capture_cuda
        self._on_device = on_device
        self._pool: Any = None
        self.stats = {"replays": 0, "eager": 0, "captures": 0}

    def __call__(self, tokens: torch.Tensor, hidden: torch.Tensor, n: int) -> torch.Tensor:
        """Drafts ``[B, n]`` for ``[B]`` tokens and ``[B, H]`` hidden states."""
        batch = tokens.shape[0]
        size = padded_size(batch, self.sizes) if self.enabled and self._on_device(tokens) else None
        entry = None if size is None else self._entry(size, n, hidden)
        if entry is None:
            self.stats["eager"] += 1
            return self.propose(tokens, hidden, n)
        entry.tokens[:batch].copy_(tokens)
        entry.hidden[:batch].copy_(hidden)
        entry.graph.replay()
        self.stats["replays"] += 1
        return entry.drafts[:batch]

    def _entry(self, size: int, n: int, like: torch.Tensor) -> CapturedProposal | None:
        key = (size, n)
        if key in self.graphs:
            return self.graphs[key]
        try:
            entry = self._capture_fn(size, n, like)
        except Exception as exc:  # a capture failure must not take the engine down
            logger.warning(
                "Arctic speculator: CUDA graph capture for batch %d, %d tokens failed (%s); "
                "drafting eagerly from now on.",
                size,
                n,
                exc,
            )
            self.enabled = False
            return None
        self.graphs[key] = entry
        self.stats["captures"] += 1
        return entry

    def _capture_cuda(self, size: int, n: int, like: torch.Tensor) -> CapturedProposal:
        tokens = torch.zeros(size, dtype=torch.long, device=like.device)
        hidden = torch.zeros(size, like.shape[-1], dtype=like.dtype, device=like.device)
        # Warm up on a side stream first (lazy initialisation must not be captured).
        side = torch.cuda.Stream(device=like.device)
        side.wait_stream(torch.cuda.current_stream(like.device))
        with torch.cuda.stream(side):
            self.propose(tokens, hidden, n)
        torch.cuda.current_stream(like.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        # thread_local: work other threads of the engine queue meanwhile (output copies)
        # must not invalidate this capture.
        with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
            drafts = self.propose(tokens, hidden, n)
        self._pool = graph.pool()
        return CapturedProposal(graph, tokens, hidden, drafts)
