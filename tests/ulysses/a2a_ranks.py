"""What each of the two gloo ranks runs in the all-to-all test (spawned processes)."""

from __future__ import annotations

import os
from pathlib import Path

import torch
import torch.distributed as dist

from arctic_inference.vllm.ulysses.all_to_all import (
    UlyssesExchange,
    heads_to_sequence,
    sequence_to_heads,
)


def causal_gqa_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Plain causal attention over ``(T, heads, D)``; query head i uses KV head
    ``i // (heads / kv_heads)`` (grouped-query attention)."""
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = torch.einsum("thd,shd->hts", q, k) / q.shape[-1] ** 0.5
    mask = torch.ones(q.shape[0], q.shape[0], dtype=torch.bool).tril()
    weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    return torch.einsum("hts,shd->thd", weights, v)


def run_rank(rank: int, world: int, port: int, folder: str) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        cases = torch.load(Path(folder) / "cases.pt")
        results = []
        for case in cases:
            tokens = case["q"].shape[0] // world
            mine = slice(rank * tokens, (rank + 1) * tokens)
            heads, kv_heads, dim = case["heads"], case["kv_heads"], case["dim"]
            exchange = UlyssesExchange(world, heads, kv_heads, dim, group=dist.group.WORLD)
            out = exchange(
                case["q"][mine].reshape(tokens, -1),
                case["k"][mine].reshape(tokens, -1),
                case["v"][mine].reshape(tokens, -1),
                causal_gqa_attention,
            )
            local = case["q"][mine]
            there = sequence_to_heads(local, world)
            back = heads_to_sequence(there, world)
            results.append({"out": out, "head_split": there, "round_trip": back})
        torch.save(results, Path(folder) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()
