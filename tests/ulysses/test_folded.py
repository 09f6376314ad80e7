"""Shift parallelism's FOLDED layout on real vLLM layers, on 2 and 4 gloo processes.

Each rank builds real vLLM TP layers (column, row, merged gate/up, QKV, vocabulary
embedding, LM head, Llama's MLP and attention) under a real ``VllmConfig`` and vLLM's
own distributed set-up with the SP groups, loads them through their own weight loaders
from one full random weight, and runs SP -> FOLDED -> SP -> FOLDED -> SP steps. Every
output must equal the one-process full-weight reference computed here, in float64."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

pytestmark = pytest.mark.vllm
sys.path.insert(0, str(Path(__file__).parent))

from fold_ranks import MODES, run_rank  # noqa: E402

HIDDEN, INTER, VOCAB, TOKENS = 64, 32, 100, 5
ATTN_HEADS, ATTN_KV_HEADS = 4, 2  # the tiny Llama's (head size 16)
# (query heads, KV heads) of bare QKV layers: KV heads split over 4 ranks, split over
# 2 and replicated over 4, replicated over every TP size.
QKV = [(8, 4), (8, 2), (8, 1)]
QKV_HEAD_SIZE = 8
TOL = {"atol": 1e-10, "rtol": 1e-10}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _case() -> dict:
    g = torch.Generator().manual_seed(0)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    weights = {
        "column": rand(INTER, HIDDEN),
        "column_b": rand(INTER),
        "row": rand(HIDDEN, INTER),
        "row_b": rand(HIDDEN),
        "gate": rand(INTER, HIDDEN),
        "gate_b": rand(INTER),
        "up": rand(INTER, HIDDEN),
        "up_b": rand(INTER),
        "embed": rand(VOCAB, HIDDEN),
        "lm_head": rand(VOCAB, HIDDEN),
        "mlp_gate": rand(INTER, HIDDEN),
        "mlp_up": rand(INTER, HIDDEN),
        "mlp_down": rand(HIDDEN, INTER),
    }
    d = HIDDEN // ATTN_HEADS
    weights["attn_q"] = rand(ATTN_HEADS * d, HIDDEN) / 4
    weights["attn_k"] = rand(ATTN_KV_HEADS * d, HIDDEN) / 4
    weights["attn_v"] = rand(ATTN_KV_HEADS * d, HIDDEN)
    weights["attn_o"] = rand(HIDDEN, ATTN_HEADS * d)
    qkv = []
    for heads, kv in QKV:
        spec = {"heads": heads, "kv_heads": kv, "head_size": QKV_HEAD_SIZE}
        for name, count in (("q", heads), ("k", kv), ("v", kv)):
            spec[name] = rand(count * QKV_HEAD_SIZE, HIDDEN)
            spec[f"b{name}"] = rand(count * QKV_HEAD_SIZE)
        qkv.append(spec)
    return {
        "hf_weights": _hf_llama(rand),
        "hidden": HIDDEN,
        "inter": INTER,
        "vocab": VOCAB,
        "attn_heads": ATTN_HEADS,
        "attn_kv_heads": ATTN_KV_HEADS,
        "weights": weights,
        "qkv": qkv,
        "x": rand(TOKENS, HIDDEN),
        "row_in": rand(TOKENS, INTER),
        "ids": torch.tensor([0, 99, 37, 64, 5]),  # both ends of the vocabulary, both halves
        "positions": torch.arange(TOKENS) + 3,
    }


def _hf_llama(rand) -> dict[str, torch.Tensor]:
    """Full Hugging Face weights of the tiny Llama of ``llama_dir(4, 2)``."""
    h, inter, vocab, d = 16 * ATTN_HEADS, 128, 256, 16
    weights = {
        "model.embed_tokens.weight": rand(vocab, h),
        "model.norm.weight": 1 + rand(h) / 10,
        "lm_head.weight": rand(vocab, h) / 4,
    }
    for i in range(2):
        p = f"model.layers.{i}."
        weights |= {
            p + "input_layernorm.weight": 1 + rand(h) / 10,
            p + "post_attention_layernorm.weight": 1 + rand(h) / 10,
            p + "self_attn.q_proj.weight": rand(ATTN_HEADS * d, h) / 8,
            p + "self_attn.k_proj.weight": rand(ATTN_KV_HEADS * d, h) / 8,
            p + "self_attn.v_proj.weight": rand(ATTN_KV_HEADS * d, h) / 8,
            p + "self_attn.o_proj.weight": rand(h, ATTN_HEADS * d) / 8,
            p + "mlp.gate_proj.weight": rand(inter, h) / 8,
            p + "mlp.up_proj.weight": rand(inter, h) / 8,
            p + "mlp.down_proj.weight": rand(h, inter) / 8,
        }
    return weights


@pytest.fixture(scope="module", params=[(2, 2), (4, 2)], ids=["sp2-tp1", "sp2-tp2"])
def ranks(request, tmp_path_factory, llama_dir) -> tuple[dict, int, int, list[dict]]:
    world, sp = request.param
    folder = tmp_path_factory.mktemp(f"fold-{world}")
    case = _case()
    torch.save(case, folder / "case.pt")
    model_dir = str(llama_dir(ATTN_HEADS, ATTN_KV_HEADS))
    mp.spawn(run_rank, args=(world, sp, _port(), str(folder), model_dir), nprocs=world, join=True)
    return case, world, sp, [torch.load(folder / f"rank{r}.pt") for r in range(world)]


# --- the reference, written from the model maths, not from the code under test ---


def _chunk(x: torch.Tensor, ranks: int, index: int) -> torch.Tensor:
    return x.chunk(ranks, dim=-1)[index]


def _heads(total: int, ranks: int, index: int) -> list[int]:
    """vLLM's split of heads over TP ranks: a block each, or a replicated head."""
    if total >= ranks:
        per = total // ranks
        return list(range(index * per, (index + 1) * per))
    return [index // (ranks // total)]


def _head_cols(x: torch.Tensor, heads: list[int], size: int) -> torch.Tensor:
    return torch.cat([x[:, h * size : (h + 1) * size] for h in heads], dim=-1)


def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    return x @ w.T + (0 if b is None else b)


def _rotary(x: torch.Tensor, positions: torch.Tensor, d: int) -> torch.Tensor:
    """Neox-style rotary embedding, base 10000, over ``(T, heads * d)``; the angles in
    float32, as vLLM's rotary cache computes them."""
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    freqs = positions[:, None].float() * inv[None]
    cos, sin = freqs.cos().double()[:, None], freqs.sin().double()[:, None]
    x = x.reshape(x.shape[0], -1, d)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).reshape(x.shape[0], -1)


def _attention(case: dict) -> torch.Tensor:
    w, x, pos = case["weights"], case["x"], case["positions"]
    d = HIDDEN // ATTN_HEADS
    q = _rotary(_linear(x, w["attn_q"]), pos, d).reshape(TOKENS, ATTN_HEADS, d)
    k = _rotary(_linear(x, w["attn_k"]), pos, d).reshape(TOKENS, ATTN_KV_HEADS, d)
    v = _linear(x, w["attn_v"]).reshape(TOKENS, ATTN_KV_HEADS, d)
    group = ATTN_HEADS // ATTN_KV_HEADS
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = torch.einsum("thd,shd->hts", q, k) / d**0.5
    mask = torch.ones(TOKENS, TOKENS, dtype=torch.bool).tril()
    out = torch.einsum("hts,shd->thd", scores.masked_fill(~mask, float("-inf")).softmax(-1), v)
    return _linear(out.reshape(TOKENS, -1), w["attn_o"])


def _expected(case: dict, ranks: int, index: int) -> dict:
    """What a rank holding shard ``index`` of ``ranks`` must compute."""
    w, x = case["weights"], case["x"]
    gate, up = _linear(x, w["gate"], w["gate_b"]), _linear(x, w["up"], w["up_b"])
    qkv = []
    for spec in case["qkv"]:
        q_heads = _heads(spec["heads"], ranks, index)
        kv_heads = _heads(spec["kv_heads"], ranks, index)
        parts = [
            _head_cols(_linear(x, spec[n], spec[f"b{n}"]), hs, QKV_HEAD_SIZE)
            for n, hs in (("q", q_heads), ("k", kv_heads), ("v", kv_heads))
        ]
        qkv.append(torch.cat(parts, dim=-1))
    mlp_in = torch.nn.functional.silu(_linear(x, w["mlp_gate"])) * _linear(x, w["mlp_up"])
    return {
        "column": _chunk(_linear(x, w["column"], w["column_b"]), ranks, index),
        "row": _linear(case["row_in"], w["row"], w["row_b"]),
        "merged": torch.cat([_chunk(gate, ranks, index), _chunk(up, ranks, index)], dim=-1),
        "qkv": qkv,
        "embed": w["embed"][case["ids"]],
        "logits": _linear(x, w["lm_head"]),
        "mlp": _linear(mlp_in, w["mlp_down"]),
        "attn": _attention(case),
    }


OUTPUTS = ["column", "row", "merged", "qkv", "embed", "logits", "mlp", "attn"]


@pytest.mark.parametrize("output", OUTPUTS)
def test_both_layouts_equal_the_full_weight_reference(ranks, output: str) -> None:
    case, world, sp, results = ranks
    tp = world // sp
    checked = 0
    for result in results:
        layouts = {
            "sp": _expected(case, tp, result["tp_rank"]),
            "folded": _expected(case, world, result["tp_rank"] * sp + result["sp_rank"]),
        }
        assert len(result["steps"]) == len(MODES) == 5
        for mode, step in zip(MODES, result["steps"], strict=True):
            got, want = step[output], layouts[mode][output]
            if output == "qkv":
                assert len(got) == len(want) == len(QKV)
            torch.testing.assert_close(got, want, **TOL)
            checked += 1
    assert checked == world * len(MODES)


def test_the_folded_step_uses_the_folded_group_and_the_tp_group_returns(ranks) -> None:
    _, world, sp, results = ranks
    for result in results:
        assert result["folded_rank"] == result["tp_rank"] * sp + result["sp_rank"]
        assert [s["tp_size"] for s in result["steps"]] == [
            world // sp if m == "sp" else world for m in MODES
        ]
        assert result["after_tp_size"] == world // sp
        assert result["weight_after_is_loaded"]  # the SP layout's own parameter is back


def test_folded_steps_copy_no_weight_memory(ranks) -> None:
    _, world, _, results = ranks
    for result in results:
        loaded = result["loaded_storages"]
        assert len(loaded) > 10
        for step in result["steps"]:
            assert step["storages"] == loaded  # every weight read lies in a loaded storage


def test_folded_outputs_are_narrower_than_the_sp_layouts(ranks) -> None:
    # Guards against a FOLDED step silently running the SP layout's shards.
    _, world, sp, results = ranks
    sp_step, folded_step = results[0]["steps"][0], results[0]["steps"][1]
    assert folded_step["column"].shape[-1] * sp == sp_step["column"].shape[-1]
    assert folded_step["merged"].shape[-1] * sp == sp_step["merged"].shape[-1]


def test_the_lm_head_folds_only_where_the_folded_group_gathers_in_order(ranks) -> None:
    # torch orders a group by world rank: the TP-major folded group of SP 2 x TP 2 is
    # [0, 2, 1, 3] and gathers as [0, 1, 2, 3], so its LM head keeps the TP layout.
    _, world, sp, results = ranks
    in_order = world == sp  # TP 1
    for result in results:
        assert result["gathers_in_order"] is in_order
        assert result["lm_head_folded"] is in_order


def _layout(mode: str, world: int, tp: int) -> dict:
    """What a layer sees in ``mode``, from the layouts' definitions."""
    ranks = tp if mode == "sp" else world
    return {
        "mode": mode,
        "tp_size": ranks,
        "column_rows": INTER // ranks,
        "merged_method": "UnquantizedLinearMethod" if mode == "sp" else "PiecewiseLinearMethod",
    }


def test_the_sizes_captured_in_the_sp_layout_split_over_sp(ranks) -> None:
    # Asked for 1, 2, 5, 8 with threshold 4: 5 would run SP but does not split over 2.
    for result in ranks[3]:
        assert result["runner_steps"]["sizes"] == [1, 2, 6, 8]
        assert result["runner_steps"]["max_size"] == 8


def test_each_graph_is_captured_in_the_layout_of_its_size(ranks) -> None:
    # vLLM captures the largest first, each after one eager warm-up of the same size.
    _, world, sp, results = ranks
    tp = world // sp
    for result in results:
        runs = result["runner_steps"]["captured"]
        assert [(r["tokens"], r["graph"], r["capturing"]) for r in runs] == [
            (size, graph, graph == "FULL") for size in (8, 6, 2, 1) for graph in ("NONE", "FULL")
        ]
        # the patched _dummy_run read vLLM's is_graph_capturing: only captures ready groups
        assert [r["scope_capturing"] for r in runs] == [r["capturing"] for r in runs]
        for run in runs:
            mode = "folded" if run["tokens"] < 4 else "sp"
            seen = {k: run[k] for k in ("mode", "tp_size", "column_rows", "merged_method")}
            assert seen == _layout(mode, world, tp), run


def test_each_step_replays_a_graph_in_the_layout_it_was_captured_in(ranks) -> None:
    _, world, sp, results = ranks
    tp = world // sp
    keys = ("mode", "tp_size", "column_rows", "merged_method")
    for result in results:
        record = result["runner_steps"]
        at_capture = {r["tokens"]: {k: r[k] for k in keys} for r in record["captured"]}
        steps = record["steps"]
        assert [(s["scheduled"], s["tokens"], s["graph"]) for s in steps] == [
            (1, 1, "FULL"),
            (3, 6, "FULL"),  # padded across the threshold: an SP graph, so an SP step
            (2, 2, "FULL"),
            (6, 6, "FULL"),
            (8, 8, "FULL"),
            (9, 9, "NONE"),  # above every graph: eager, in the layout of its own tokens
            (4, 6, "FULL"),
            (2, 2, "FULL"),  # two decode requests
        ]
        replayed = [s for s in steps if s["graph"] == "FULL"]
        assert len(replayed) == 7
        for step in replayed:
            assert {k: step[k] for k in keys} == at_capture[step["tokens"]], step
        assert {k: steps[5][k] for k in keys} == _layout("sp", world, tp)


def test_the_model_is_in_the_sp_layout_outside_steps_and_captures(ranks) -> None:
    _, world, sp, results = ranks
    for result in results:
        record = result["runner_steps"]
        assert record["before"] == record["after"] == _layout("sp", world, world // sp)


def test_what_cannot_fold_is_refused_by_name(ranks) -> None:
    _, _, _, results = ranks
    for result in results:
        refusals = result["refusals"]
        assert set(refusals) == {"bare_qkv", "unknown", "extra_vocab", "quantized"}
        assert "(Module) owns a QKV projection but keeps none of num_heads" in refusals["bare_qkv"]
        assert refusals["unknown"] == (
            "shift parallelism cannot fold these tensor-parallel modules: experts (Sharded)."
        )
        assert "embed: 10 added vocabulary entries" in refusals["extra_vocab"]
        assert refusals["quantized"].startswith(
            "proj (ColumnParallelLinear) uses Fp8LinearMethod; folded views are cut from "
            "unquantized weights only."
        )


def test_a_whole_vllm_llama_gives_the_same_logits_in_both_layouts(ranks) -> None:
    # vLLM's LlamaForCausalLM (2 decoder layers), loaded by its own load_weights; the
    # SP layout's TP forward is vLLM's plain TP, the reference for the FOLDED one.
    _, world, sp, results = ranks
    for result in results:
        whole = result["whole_model"]
        assert whole["sp"].shape == (TOKENS, 256)
        torch.testing.assert_close(whole["folded"], whole["sp"], atol=1e-9, rtol=1e-9)
        assert not torch.equal(whole["sp"][0], whole["sp"][1])  # real, distinct logits
        for i in range(2):
            for part in ("qkv_proj", "o_proj", "attn"):
                name = f"model.layers.{i}.self_attn" + ("" if part == "attn" else f".{part}")
                assert name in whole["modules"]
        assert "model.embed_tokens" in whole["modules"]
    first = results[0]["whole_model"]["sp"]
    for result in results[1:]:
        torch.testing.assert_close(result["whole_model"]["folded"], first, atol=1e-9, rtol=1e-9)


def test_folded_views_follow_reloaded_weights(ranks) -> None:
    # After the steps each rank doubled the column weight into a new tensor and
    # tripled the row weight in place; the next FOLDED step must compute with both.
    case, world, sp, results = ranks
    w = case["weights"]
    for result in results:
        index = result["tp_rank"] * sp + result["sp_rank"]
        column = _chunk(_linear(case["x"], 2 * w["column"], w["column_b"]), world, index)
        row = _linear(case["row_in"], 3 * w["row"], w["row_b"])
        torch.testing.assert_close(result["reloaded"]["column"], column, **TOL)
        torch.testing.assert_close(result["reloaded"]["row"], row, **TOL)
