"""The random-weight SwiftKV checkpoint builder."""

from __future__ import annotations

import json

from arctic_inference.vllm.swiftkv import make_checkpoint as mc


def test_tiny_checkpoint_from_scratch_and_from_a_base(tmp_path, registered):
    from safetensors.torch import load_file
    from transformers import AutoConfig

    assert mc.main(["--size", "tiny", "--out", str(tmp_path / "a"), "--vocab-size", "300"]) == 0
    cfg = AutoConfig.from_pretrained(tmp_path / "a")
    assert (cfg.model_type, cfg.num_hidden_layers, cfg.num_key_value_layers) == (
        "llama_swiftkv",
        4,
        2,
    )
    state = load_file(str(tmp_path / "a" / "model.safetensors"))
    swift = sorted(k for k in state if "swiftkv" in k)
    assert swift == sorted(
        [f"model.layers.{i}.self_attn.{p}_proj_swiftkv.weight" for i in (2, 3) for p in "qkv"]
        + ["model.norm_swiftkv.weight"]
    )
    assert state["model.layers.2.self_attn.k_proj_swiftkv.weight"].shape == (128, 256)
    # converting an existing Llama keeps its weights and copies its tokenizer files
    base = tmp_path / "base"
    base.mkdir()
    config, weights = mc.random_llama(mc.SHAPES["tiny"], 300, seed=3, logit_scale=1.0)
    mc.write_checkpoint(base, config, weights, tokenizer_from=None)
    (base / "tokenizer.json").write_text("{}")
    assert mc.main(["--base", str(base), "--out", str(tmp_path / "b"), "--kv-layers", "4"]) == 0
    off = load_file(str(tmp_path / "b" / "model.safetensors"))
    assert set(off) == set(weights)  # SwiftKV off: nothing added
    assert all(off[k].equal(weights[k]) for k in weights)
    assert json.loads((tmp_path / "b" / "config.json").read_text())["num_key_value_layers"] == 4
    assert (tmp_path / "b" / "tokenizer.json").exists()


def test_bad_boundary_exits_2_with_a_message(tmp_path, capsys):
    assert mc.main(["--size", "tiny", "--out", str(tmp_path / "x"), "--kv-layers", "9"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "make_checkpoint: --kv-layers must be 1..4, got 9"
    assert not (tmp_path / "x").exists()


def test_missing_base_exits_2(tmp_path, capsys):
    assert mc.main(["--base", str(tmp_path / "nope"), "--out", str(tmp_path / "y")]) == 2
    assert "make_checkpoint:" in capsys.readouterr().err
