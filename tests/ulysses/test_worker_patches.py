"""Worker patches on the real vLLM classes: groups built by vLLM's own distributed
set-up on two gloo ranks, the token split of a model forward, and SP = 1 untouched."""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp

pytestmark = pytest.mark.vllm
sys.path.insert(0, str(Path(__file__).parent))

from sp_ranks import TinyModel, run_rank  # noqa: E402

from arctic_inference.patching import is_applied  # noqa: E402
from arctic_inference.vllm.patch_set import WORKER_FEATURES, enabled_features  # noqa: E402
from arctic_inference.vllm.ulysses.token_split import TokenSplit  # noqa: E402
from arctic_inference.vllm.ulysses.worker_patches import (  # noqa: E402
    AttentionSPPatch,
    ModelRunnerSPPatch,
    ParallelStateSPPatch,
)

Build = Callable[..., Any]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_worker_feature_is_enabled_only_with_sp(build_config: Build) -> None:
    (feature,) = [f for f in WORKER_FEATURES if f.name == "ulysses-worker"]
    assert len(feature.patches) == 3
    on = build_config(arctic={"ulysses_sequence_parallel_size": 2})
    off = build_config()
    assert "ulysses-worker" in enabled_features("worker", on)
    assert "ulysses-worker" not in enabled_features("worker", off)


def test_patches_apply_to_the_real_classes(reverted_patches: None) -> None:
    for patch in (ParallelStateSPPatch, AttentionSPPatch, ModelRunnerSPPatch):
        record = patch.apply()
        assert is_applied(patch)
        assert record.target.startswith("vllm.")
    from vllm.distributed import parallel_state

    assert (
        parallel_state.initialize_model_parallel
        is ParallelStateSPPatch.__dict__["initialize_model_parallel"]
    )


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory, llama_dir) -> list[dict]:
    folder = tmp_path_factory.mktemp("sp-ranks")
    mp.spawn(run_rank, args=(_port(), str(folder), str(llama_dir(8, 2))), nprocs=2, join=True)
    return [torch.load(folder / f"rank{r}.pt") for r in range(2)]


def test_vllm_set_up_builds_the_sp_groups(two_ranks: list[dict]) -> None:
    for result in two_ranks:
        assert result["sp_ranks"] == [0, 1]
        assert result["folded_ranks"] == [0, 1]
        assert result["pp_ranks"] in ([0], [1])
        assert result["tp_size"] == 1  # vLLM's layers see the SP layout's TP
        assert result["folded_tp_size"] == 2  # inside a FOLDED step: all SP x TP ranks
        assert result["after_tp_size"] == 1  # and back after it
    assert [r["tp_ranks"] for r in two_ranks] == [[0], [1]]


def test_token_split_forward_equals_the_whole_forward(two_ranks: list[dict]) -> None:
    model = TinyModel()
    with torch.no_grad():
        expected = model(torch.tensor([3, 1, 4, 1, 5, 9, 2]), torch.arange(7))
    for result in two_ranks:
        for name in ("out", "folded_out", "outside"):
            torch.testing.assert_close(result[name], expected)


def test_the_model_runs_its_block_only_in_the_sp_layout(two_ranks: list[dict]) -> None:
    # 7 tokens over SP 2: 4 per rank in an SP step (and outside steps, the SP layout
    # the model was loaded in); all 7 in a FOLDED one. The hooks are registered once.
    for result in two_ranks:
        assert result["seen"] == [4, 7, 4]
        assert result["installed_once"]


@pytest.mark.parametrize(
    ("tokens", "sp", "padded", "local"), [(7, 2, 8, 4), (8, 2, 8, 4), (5, 4, 8, 2)]
)
def test_token_split_blocks(tokens: int, sp: int, padded: int, local: int) -> None:
    x = torch.arange(tokens) + 1
    blocks = [TokenSplit(tokens, sp, r).take(x) for r in range(sp)]
    assert all(b.shape == (local,) for b in blocks)
    joined = torch.cat(blocks)
    assert joined.shape == (padded,)
    assert torch.equal(joined[:tokens], x) and not joined[tokens:].any()
    assert torch.equal(TokenSplit(tokens, sp, 0).trim(joined), x)


def test_token_split_of_a_positions_matrix_uses_its_last_dim() -> None:
    positions = torch.arange(12).reshape(3, 4)  # M-RoPE style (3, tokens)
    assert torch.equal(TokenSplit(4, 2, 1).take(positions, dim=1), positions[:, 2:])


def test_token_split_refuses_wrong_shapes() -> None:
    with pytest.raises(ValueError, match="SP rank 2 is outside"):
        TokenSplit(4, 2, 2)
    with pytest.raises(ValueError, match="expected 4 tokens"):
        TokenSplit(4, 2, 0).take(torch.zeros(5))
    with pytest.raises(ValueError, match="expected 4 gathered tokens"):
        TokenSplit(3, 2, 0).trim(torch.zeros(3))
