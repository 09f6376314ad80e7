"""The checkpoint builder's command line."""

from __future__ import annotations

import json

from arctic_inference.vllm.spec_dec import make_checkpoint as mc
from arctic_inference.vllm.spec_dec.config import parse_speculator_config


def test_builds_from_a_target_folder(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    llama = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "vocab_size": 256}
    (target / "config.json").write_text(json.dumps(llama))
    out = tmp_path / "lstm"
    assert mc.main([str(out), "--kind", "lstm", "--target", str(target), "--n-predict", "4"]) == 0
    cfg = json.loads((out / "config.json").read_text())
    spec = parse_speculator_config(cfg)
    assert (spec.hidden_dim, spec.vocab_size, spec.n_predict) == (64, 256, 4)
    assert cfg["base_model_archs"] == ["LlamaForCausalLM"]
    from safetensors.torch import load_file

    names = set(load_file(str(out / "model.safetensors")))
    assert "forget_emb.0.weight" in names and "cell_proj.1.weight" in names


def test_missing_shape_exits_2_with_a_message(tmp_path, capsys):
    assert mc.main([str(tmp_path / "x")]) == 2
    assert (
        capsys.readouterr().err.strip() == "error: give --target DIR, or both --hidden and --vocab"
    )
    assert not (tmp_path / "x").exists()


def test_unreadable_target_exits_2(tmp_path, capsys):
    assert mc.main([str(tmp_path / "x"), "--target", str(tmp_path / "nope")]) == 2
    assert "cannot read the target config" in capsys.readouterr().err


def test_target_without_architectures_exits_2(tmp_path, config_only_llama, capsys):
    assert mc.main([str(tmp_path / "x"), "--target", str(config_only_llama(512))]) == 2
    assert "lacks hidden_size, vocab_size or architectures" in capsys.readouterr().err


def test_untied_lstm_is_refused(tmp_path, capsys):
    assert (
        mc.main(
            [str(tmp_path / "x"), "--kind", "lstm", "--hidden", "8", "--vocab", "9", "--untied"]
        )
        == 2
    )
    assert "always tied" in capsys.readouterr().err
