"""Graphed proposals: padding, reuse per (size, length), fallbacks — with a stand-in capture.

The real capture needs a GPU (``tests/gpu/test_spec_gpu.py`` compares graphed and eager
drafts there); here the capture runs the proposal on the static buffers at each replay,
which is what a graph does, so the padding and slicing logic is checked on the CPU.
"""

from __future__ import annotations

import pytest
import torch

from arctic_inference.vllm.spec_dec.graphs import (
    CapturedProposal,
    GraphedProposals,
    padded_size,
)


@pytest.mark.parametrize(
    "batch, size", [(1, 1), (2, 2), (3, 4), (17, 24), (24, 24), (500, 512), (513, None)]
)
def test_padded_size(batch, size):
    assert padded_size(batch, (1, 2, 4, 8, 16, 24, 32, 64, 128, 256, 512)) == size


def propose(tokens: torch.Tensor, hidden: torch.Tensor, n: int) -> torch.Tensor:
    """A deterministic stand-in speculator: row-wise, depends on the token and the state."""
    base = tokens[:, None] * 7 + hidden.sum(-1).round().long()[:, None]
    return (base + torch.arange(1, n + 1)) % 97


def stand_in_capture(log: list):
    def capture(size: int, n: int, like: torch.Tensor) -> CapturedProposal:
        log.append((size, n))
        tokens = torch.zeros(size, dtype=torch.long)
        hidden = torch.zeros(size, like.shape[-1], dtype=like.dtype)
        drafts = torch.zeros(size, n, dtype=torch.long)

        class Graph:
            def replay(self):
                drafts.copy_(propose(tokens, hidden, n))

        return CapturedProposal(Graph(), tokens, hidden, drafts)

    return capture


def _inputs(batch: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 50, (batch,), generator=g), torch.randn(batch, 8, generator=g) * 4


def test_replays_match_eager_drafts_and_graphs_are_reused():
    log: list = []
    graphed = GraphedProposals(
        propose, enabled=True, sizes=(1, 2, 4, 8), capture=stand_in_capture(log),
        on_device=lambda t: True,
    )  # fmt: skip
    for batch, n, seed in [(3, 3, 0), (4, 3, 1), (3, 3, 2), (1, 3, 3), (3, 2, 4)]:
        tokens, hidden = _inputs(batch, seed)
        assert torch.equal(graphed(tokens, hidden, n), propose(tokens, hidden, n))
    # (4, 3) once for batches 3, 4 and 3 again; then (1, 3) and (4, 2).
    assert log == [(4, 3), (1, 3), (4, 2)]
    assert graphed.stats == {"replays": 5, "eager": 0, "captures": 3}


def test_too_large_batches_and_host_tensors_run_eagerly():
    log: list = []
    graphed = GraphedProposals(
        propose, enabled=True, sizes=(1, 2), capture=stand_in_capture(log),
        on_device=lambda t: False,
    )  # fmt: skip
    tokens, hidden = _inputs(2, 0)
    assert torch.equal(graphed(tokens, hidden, 3), propose(tokens, hidden, 3))
    graphed._on_device = lambda t: True
    tokens, hidden = _inputs(5, 1)
    assert torch.equal(graphed(tokens, hidden, 3), propose(tokens, hidden, 3))
    assert log == [] and graphed.stats["eager"] == 2


def test_a_failed_capture_turns_graphs_off_and_still_drafts(caplog):
    calls = []

    def broken(size, n, like):
        calls.append(size)
        raise RuntimeError("operation not permitted when stream is capturing")

    graphed = GraphedProposals(propose, enabled=True, capture=broken, on_device=lambda t: True)
    for seed in range(3):
        tokens, hidden = _inputs(3, seed)
        assert torch.equal(graphed(tokens, hidden, 3), propose(tokens, hidden, 3))
    assert calls == [4] and graphed.enabled is False and graphed.stats["eager"] == 3


def test_disabled_never_captures():
    log: list = []
    graphed = GraphedProposals(
        propose, enabled=False, capture=stand_in_capture(log), on_device=lambda t: True
    )
    tokens, hidden = _inputs(3, 0)
    assert torch.equal(graphed(tokens, hidden, 3), propose(tokens, hidden, 3)) and log == []
