"""The all-to-all wrapper on 2 CPU processes (gloo) against a one-process reference."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).parent))

from a2a_ranks import causal_gqa_attention, run_rank  # noqa: E402

from arctic_inference.vllm.ulysses.all_to_all import (  # noqa: E402
    UlyssesExchange,
    heads_to_sequence,
    sequence_to_heads,
)

SP = 2
# (query heads, KV heads): no grouping, KV heads split over SP, KV head replicated.
SHAPES = [(4, 4), (4, 2), (4, 1), (8, 2)]
TOKENS, DIM = 6, 8


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_rank_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], list[list[dict]]]:
    folder = tmp_path_factory.mktemp("a2a")
    generator = torch.Generator().manual_seed(0)
    cases = []
    for heads, kv_heads in SHAPES:
        cases.append(
            {
                "heads": heads,
                "kv_heads": kv_heads,
                "dim": DIM,
                "q": torch.randn(TOKENS, heads, DIM, generator=generator),
                "k": torch.randn(TOKENS, kv_heads, DIM, generator=generator),
                "v": torch.randn(TOKENS, kv_heads, DIM, generator=generator),
            }
        )
    torch.save(cases, folder / "cases.pt")
    mp.spawn(run_rank, args=(SP, _port(), str(folder)), nprocs=SP, join=True)
    return cases, [torch.load(folder / f"rank{r}.pt") for r in range(SP)]


@pytest.mark.parametrize("index", range(len(SHAPES)), ids=[f"h{h}-kv{k}" for h, k in SHAPES])
def test_two_ranks_match_one_process_attention(two_rank_run, index: int) -> None:
    cases, ranks = two_rank_run
    case = cases[index]
    reference = causal_gqa_attention(case["q"], case["k"], case["v"])  # all tokens, all heads
    local = TOKENS // SP
    for rank in range(SP):
        expected = reference[rank * local : (rank + 1) * local].reshape(local, -1)
        torch.testing.assert_close(ranks[rank][index]["out"], expected)


@pytest.mark.parametrize("index", range(len(SHAPES)), ids=[f"h{h}-kv{k}" for h, k in SHAPES])
def test_head_split_holds_all_tokens_of_the_ranks_heads(two_rank_run, index: int) -> None:
    cases, ranks = two_rank_run
    q = cases[index]["q"]
    per = q.shape[1] // SP
    for rank in range(SP):
        torch.testing.assert_close(
            ranks[rank][index]["head_split"], q[:, rank * per : (rank + 1) * per]
        )
        local = TOKENS // SP
        torch.testing.assert_close(
            ranks[rank][index]["round_trip"], q[rank * local : (rank + 1) * local]
        )


def test_one_rank_is_the_identity() -> None:
    x = torch.randn(5, 4, 3)
    assert sequence_to_heads(x, 1) is x
    assert heads_to_sequence(x, 1) is x
    out = UlyssesExchange(1, 4, 2, 3, group=None)(
        x.reshape(5, -1), x[:, :2].reshape(5, -1), x[:, :2].reshape(5, -1), causal_gqa_attention
    )
    torch.testing.assert_close(out, causal_gqa_attention(x, x[:, :2], x[:, :2]).reshape(5, -1))


def test_shapes_that_cannot_split_are_refused_before_any_exchange() -> None:
    with pytest.raises(ValueError, match="3 heads do not split over 2"):
        sequence_to_heads(torch.zeros(2, 3, 4), 2)
    with pytest.raises(ValueError, match="5 tokens do not split over 2.*multiple of 2"):
        heads_to_sequence(torch.zeros(5, 2, 4), 2)
    with pytest.raises(ValueError, match="3 KV heads neither split nor replicate over SP=2"):
        UlyssesExchange(2, 6, 3, 4, group=None)
