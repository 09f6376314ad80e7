"""The real speculator classes, resolved through vLLM's registry and run on the CPU."""

from __future__ import annotations

import pytest
import torch

from arctic_inference.vllm.spec_dec.config import SpeculatorConfigError
from arctic_inference.vllm.spec_dec.model import (
    ArcticLSTMSpeculator,
    ArcticMLPSpeculator,
    merge_shard_argmax,
)
from tests.spec_dec.conftest import HIDDEN, VOCAB, build_speculator, make_spec_ckpt
from tests.spec_dec.reference import ReferenceSpeculator

pytestmark = pytest.mark.usefixtures("registered", "one_rank_group")

CASES = {
    "mlp-untied": dict(kind="mlp", tie_weights=False),
    "mlp-tied": dict(kind="mlp", tie_weights=True),
    "mlp-unscaled": dict(kind="mlp", tie_weights=False, scale_input=False),
    "lstm": dict(kind="lstm"),
}


@pytest.fixture(scope="module")
def ckpts(spec_root):
    return {name: make_spec_ckpt(spec_root, name, **fields) for name, fields in CASES.items()}


def _inputs(seed: int = 0, batch: int = 7):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (batch,), generator=g), torch.randn(
        batch, HIDDEN, generator=g
    ) * 3


@pytest.mark.parametrize("case", list(CASES))
def test_every_parameter_comes_from_the_checkpoint(ckpts, case):
    model, loaded = build_speculator(ckpts[case])
    assert loaded == set(dict(model.named_parameters()))


@pytest.mark.parametrize("case", list(CASES))
def test_drafts_are_the_float64_reference_greedy_tokens(ckpts, case):
    model, _ = build_speculator(ckpts[case])
    ids, hidden = _inputs()
    with torch.inference_mode():
        drafts = model.generate_proposals(ids, hidden, 3)
    assert drafts.shape == (7, 3) and drafts.dtype == torch.long
    logits = ReferenceSpeculator(ckpts[case]).step_logits(ids, hidden, drafts)
    chosen = logits.gather(-1, drafts.unsqueeze(-1)).squeeze(-1)
    # Each drafted token is the reference's best (to float32 rounding) given the ones before it.
    assert torch.all(chosen >= logits.max(-1).values - 1e-5)
    # The case is not degenerate: drafts differ across rows and steps.
    assert drafts.unique().numel() > 3


def test_registry_resolves_each_architecture_to_its_class(ckpts, spec_root):
    assert type(build_speculator(ckpts["mlp-tied"], load=False)[0]) is ArcticMLPSpeculator
    assert type(build_speculator(ckpts["lstm"], load=False)[0]) is ArcticLSTMSpeculator
    legacy = make_spec_ckpt(
        spec_root, "legacy", kind="lstm", architectures=["MLPVariantSpeculatorPreTrainedModel"]
    )
    assert type(build_speculator(legacy, load=False)[0]) is ArcticLSTMSpeculator


def test_lstm_architecture_with_the_mlp_step_loads_sequential_names(spec_root, tmp_path):
    """A ``sum_rnn`` checkpoint of the LSTM architecture names stages ``emb.0.0.weight``."""
    from safetensors.torch import load_file, save_file

    mlp = make_spec_ckpt(spec_root, "rnn-src", kind="mlp", tie_weights=True, width=HIDDEN)
    cfg = (mlp / "config.json").read_text()
    import json

    raw = json.loads(cfg)
    rnn_cfg = {
        **{
            k: raw[k]
            for k in ("vocab_size", "n_predict", "tie_weights", "scale_input", "base_model_archs")
        },
        "architectures": ["ArcticLSTMSpeculatorPreTrainedModel"],
        "model_type": "mlp_speculator",
        "method": "sum_rnn",
        "input_hidden_dim": HIDDEN,
        "emb_dim": str(HIDDEN),
        "inner_dim": str(HIDDEN),
        "proj_dim": str(HIDDEN),
        "top_k_tokens_per_head": [1, 1, 1],
    }
    out = tmp_path / "rnn"
    out.mkdir()
    renamed = {}
    for name, tensor in load_file(str(mlp / "model.safetensors")).items():
        stage, idx, rest = name.split(".", 2)
        renamed[name if stage == "head" else f"{stage}.{idx}.0.{rest}"] = tensor
    save_file(renamed, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps(rnn_cfg))
    rnn, loaded = build_speculator(out)
    ref, _ = build_speculator(mlp)
    assert type(rnn) is ArcticMLPSpeculator and loaded == set(dict(rnn.named_parameters()))
    ids, hidden = _inputs(3)
    assert torch.equal(
        rnn.generate_proposals(ids, hidden, 3), ref.generate_proposals(ids, hidden, 3)
    )


def test_tied_speculators_draft_past_n_predict_untied_do_not(ckpts):
    ids, hidden = _inputs()
    tied, _ = build_speculator(ckpts["mlp-tied"])
    assert tied.generate_proposals(ids, hidden, 5).shape == (7, 5)
    untied, _ = build_speculator(ckpts["mlp-untied"])
    with pytest.raises(ValueError, match="1 to 3 tokens"):
        untied.generate_proposals(ids, hidden, 4)


def test_hidden_size_of_another_target_is_refused(ckpts):
    model, _ = build_speculator(ckpts["lstm"])
    with pytest.raises(ValueError, match="hidden states of size 64"):
        model.generate_proposals(torch.tensor([1]), torch.zeros(1, 32), 2)


def test_unknown_checkpoint_tensor_is_refused(ckpts):
    model, _ = build_speculator(ckpts["mlp-untied"], load=False)
    with pytest.raises(SpeculatorConfigError, match="'emb.7.weight' has no place"):
        model.load_weights([("emb.7.weight", torch.zeros(VOCAB, 48))])


def test_wrong_shape_is_refused(ckpts):
    model, _ = build_speculator(ckpts["lstm"], load=False)
    with pytest.raises(SpeculatorConfigError, match="forget_proj.0.weight"):
        model.load_weights([("forget_proj.0.weight", torch.zeros(64, 10))])


def test_prefixed_checkpoint_names_load(ckpts):
    from safetensors.torch import load_file

    model, _ = build_speculator(ckpts["mlp-untied"], load=False)
    weights = load_file(str(ckpts["mlp-untied"] / "model.safetensors"))
    loaded = model.load_weights((f"speculator.{k}", v) for k, v in weights.items())
    assert loaded == set(dict(model.named_parameters()))


def test_sharded_argmax_equals_the_global_argmax_ties_to_the_lowest_id():
    g = torch.Generator().manual_seed(5)
    logits = torch.randint(0, 4, (50, 24), generator=g).float()  # many ties
    shards = logits.split(6, dim=-1)
    values = torch.stack([s.max(-1).values for s in shards], -1)
    indices = torch.stack([s.argmax(-1) + 6 * r for r, s in enumerate(shards)], -1)
    assert torch.equal(merge_shard_argmax(values, indices), logits.argmax(-1))
