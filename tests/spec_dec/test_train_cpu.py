"""The distillation script end to end on a tiny random Llama (CPU, seconds).

What it must get right: the checkpoint it writes is the public format, and the
model vLLM serves from it drafts what the training-time module predicts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "spec"))
import train_speculator  # noqa: E402

from tests.spec_dec.conftest import build_speculator  # noqa: E402

pytestmark = pytest.mark.usefixtures("registered", "one_rank_group")


@pytest.fixture(scope="module")
def tiny_target(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    path = tmp_path_factory.mktemp("tiny-target")
    LlamaForCausalLM(cfg).save_pretrained(path)
    return path


@pytest.mark.parametrize("kind", ["mlp", "lstm"])
def test_trained_checkpoint_serves_what_was_trained(tiny_target, tmp_path, kind):
    out = tmp_path / kind
    argv = [
        "--target", str(tiny_target), "--out", str(out), "--kind", kind,
        "--prompts", "20", "--prompt-len", "16", "--gen-len", "24", "--gen-batch", "20",
        "--steps", "60", "--batch", "64", "--eval-every", "10", "--lr", "0.05",
    ]  # fmt: skip
    assert train_speculator.main(argv) == 0
    served, loaded = build_speculator(out)
    assert loaded == set(dict(served.named_parameters()))

    import json

    from safetensors.torch import load_file

    config = json.loads((out / "config.json").read_text())
    assert config["base_model_archs"] == ["LlamaForCausalLM"]
    # Two of the twenty prompts are held out and scored at every evaluation, per head.
    report = json.loads((out / "training.json").read_text())
    assert report["windows"]["held_out"] > 0 and report["windows"]["train"] > 0
    history = report["history"]
    assert [h["step"] for h in history] == [0, 10, 20, 30, 40, 50, 59]
    assert all(len(h["val_top1"]) == 3 and 0 <= min(h["val_top1"]) for h in history)
    # The checkpoint written is the best held-out evaluation, not the last step's state:
    # rescoring it on the same held-out windows gives the recorded best score.
    best = report["best"]
    assert best["val_accepted"] == max(h["val_accepted"] for h in history)
    trained = train_speculator.TrainableSpeculator(
        config, load_file(str(out / "model.safetensors"))
    )
    prompts = train_speculator.make_prompts(64, 20, 16, 0)
    val = train_speculator.training_windows(
        *train_speculator.collect(str(tiny_target), prompts[:2], 24, 20, "cpu"), 3
    )
    assert train_speculator.held_out_scores(trained, val)[1] == best["val_accepted"]
    g = torch.Generator().manual_seed(1)
    hidden = torch.randn(6, 32, generator=g)
    first = torch.randint(4, 64, (6,), generator=g)
    drafts = served.generate_proposals(first, hidden, 3)
    # Teacher-force the training module on the served drafts: each is its argmax.
    reads = torch.cat([first[:, None], drafts[:, :-1]], dim=1)
    with torch.no_grad():
        logits = torch.stack(trained(hidden, reads), dim=1)
    chosen = logits.gather(-1, drafts[..., None]).squeeze(-1)
    assert torch.all(chosen >= logits.max(-1).values - 1e-4)


def test_windows_pair_each_read_token_with_the_next():
    seq = torch.arange(10)[None]  # prompt of 4 (start=4), then generated 4..9
    hidden = torch.arange(10.0)[None, :, None]
    h, reads, targets = train_speculator.training_windows([seq], [hidden], [4], n=2)
    assert h[:, 0].tolist() == [3.0, 4.0, 5.0, 6.0]
    assert reads.tolist() == [[4, 5], [5, 6], [6, 7], [7, 8]]
    assert targets.tolist() == [[5, 6], [6, 7], [7, 8], [8, 9]]


def test_held_out_scores_count_heads_and_leading_runs():
    class Fixed(torch.nn.Module):
        """Head k always predicts token k."""

        def forward(self, hidden, reads):
            n = hidden.shape[0]
            return [torch.nn.functional.one_hot(torch.full((n,), k), 5).float() for k in range(3)]

    hidden = torch.zeros(4, 2)
    reads = torch.zeros(4, 3, dtype=torch.long)
    targets = torch.tensor([[0, 1, 0], [0, 0, 0], [1, 1, 2], [0, 1, 2]])
    # head 0 right on rows 0, 1, 3; head 1 on 0, 2, 3; head 2 on 2, 3. Chunks of 3 rows.
    # Leading right heads per row: 2, 1, 0 (head 0 wrong, the later hits do not count), 3.
    acc, accepted = train_speculator.held_out_scores(Fixed(), (hidden, reads, targets), chunk=3)
    assert acc == [0.75, 0.75, 0.5]
    assert accepted == 1.5
