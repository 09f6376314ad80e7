"""Distil an Arctic speculator (MLP or LSTM) from a target model's own greedy generations.

Runs on one GPU in a few minutes for the staged test models (``copy-llama``,
``small-llama``; ``../shared/gpu/README.md``) and writes the public
checkpoint format (``config.json`` + ``model.safetensors``) that
``speculative_config={"method": "arctic", "model": OUT}`` serves. No weights
are committed; this script rebuilds them.

Data: prompts of the kind the bench serves (random documents that re-quote
earlier spans, plus fresh random text), continued greedily by the target with
Hugging Face transformers; one forward pass over each full sequence gives the
final (normed) hidden states, the ones vLLM hands the proposer.

Training: for a generated position t the speculator starts from the target's
hidden state at t and, step k = 0..n-1, reads token t+1+k of the greedy path
and is trained (cross-entropy) to predict token t+2+k, feeding its own state
forward. The maths is the served model's (:mod:`arctic_inference.vllm.spec_dec.ops`
reference functions, differentiable), so what is trained is what is served.

Held out: a tenth of the prompts (``--val-fraction``) never reach the optimiser; the
top-1 accuracy per head on them is what serving will see (accuracy on the training
windows alone can be memorisation: a speculator whose later heads beat its first
one on training data has learnt the windows, not the model). Both are logged and
written to ``training.json``.

    python bench/spec/train_speculator.py --target /opt/models/copy-llama \\
        --out /tmp/spec/copy-mlp --kind mlp
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from arctic_inference.vllm.spec_dec import make_checkpoint as mc
from arctic_inference.vllm.spec_dec.config import parse_speculator_config
from arctic_inference.vllm.spec_dec.ops import speculator_ln_reference, sum_lstm_reference

LN_EPS = 1e-6


def make_prompts(vocab: int, n: int, length: int, seed: int) -> list[list[int]]:
    """Half re-quoting documents, half fresh random text (token ids from 4 up)."""
    rng = random.Random(seed)
    prompts = []
    for i in range(n):
        doc = [rng.randrange(4, vocab) for _ in range(length)]
        if i % 2 == 0:
            start = rng.randrange(0, length // 2)
            doc = doc + doc[start : start + length // 4]
        prompts.append(doc)
    return prompts


@torch.inference_mode()
def collect(target: str, prompts: list[list[int]], gen_len: int, batch: int, device: str):
    """Greedy continuations, their final hidden states and the generated span per row."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(target, torch_dtype=torch.bfloat16).to(device)
    model.eval()
    seqs, states, starts = [], [], []
    for b in range(0, len(prompts), batch):
        chunk = prompts[b : b + batch]
        width = max(len(p) for p in chunk)
        ids = torch.tensor([[0] * (width - len(p)) + p for p in chunk], device=device)
        mask = (
            torch.arange(width, device=device)[None]
            >= width - torch.tensor([len(p) for p in chunk], device=device)[:, None]
        ).long()
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=False,
            max_new_tokens=gen_len,
            min_new_tokens=gen_len,
            pad_token_id=0,
        )
        full_mask = torch.cat([mask, torch.ones_like(out[:, width:])], dim=1)
        # Left padding: positions count real tokens only, as during generation.
        positions = (full_mask.cumsum(-1) - 1).clamp(min=0)
        hidden = model(
            out, attention_mask=full_mask, position_ids=positions, output_hidden_states=True
        ).hidden_states[-1]
        seqs.append(out.cpu())
        states.append(hidden.float().cpu())
        starts.extend([width] * len(chunk))
    return seqs, states, starts


class TrainableSpeculator(torch.nn.Module):
    """The checkpoint's tensors as parameters, with the served model's step maths."""

    def __init__(self, config: dict, state: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.spec = parse_speculator_config(config)
        self.names = list(state)
        self.params = torch.nn.ParameterList(
            [torch.nn.Parameter(state[n].clone()) for n in self.names]
        )

    def t(self, name: str) -> torch.Tensor:
        return self.params[self.names.index(name)]

    def forward(self, hidden: torch.Tensor, tokens: torch.Tensor) -> list[torch.Tensor]:
        """``hidden [N, H]``, ``tokens [N, n]`` (token read at each step) -> logits per step."""
        spec = self.spec
        c = spec.emb_scale
        state = hidden
        if spec.scale_input:
            state = speculator_ln_reference(state, None, None, LN_EPS) / 2**0.5
        cell = None
        out = []
        for k in range(tokens.shape[1]):
            tok = tokens[:, k]
            i = 0 if spec.tie_weights else k
            p = min(k, 1) if spec.tie_weights else k
            if spec.is_lstm:
                proj = torch.cat(
                    [self.t(f"{g}_proj.{p}.weight") for g in ("forget", "input", "output", "cell")]
                )
                mixed = state @ proj.T
                z4 = F.embedding(tok, self.t("forget_emb.0.weight")).repeat(1, 4)
                if cell is None:
                    cell = torch.zeros(mixed.shape[0], spec.width, device=mixed.device)
                state, cell = sum_lstm_reference(
                    mixed,
                    z4,
                    cell,
                    self.t("cell_ln.0.weight"),
                    self.t("cell_ln.0.bias"),
                    self.t("state_ln.0.weight"),
                    self.t("state_ln.0.bias"),
                    c,
                    LN_EPS,
                    LN_EPS,
                )
            else:
                mixed = (
                    state @ self.t(f"proj.{p}.weight").T
                    + F.embedding(tok, self.t(f"emb.{i}.weight")) * c
                )
                state = F.gelu(
                    speculator_ln_reference(
                        mixed, self.t(f"ln.{i}.weight"), self.t(f"ln.{i}.bias"), LN_EPS
                    )
                )
            out.append(state @ self.t(f"head.{i}.weight").T)
        return out

    def state_dict_out(self) -> dict[str, torch.Tensor]:
        # A copy: a snapshot taken mid-training must not follow the parameters it was taken from.
        return {n: p.detach().float().cpu().clone() for n, p in zip(self.names, self.params)}


def training_windows(seqs, states, starts, n: int):
    """(hidden [N, H], read tokens [N, n], targets [N, n]) over every generated position."""
    hs, reads, targets = [], [], []
    for seq, hid, start in zip(seqs, states, starts):
        for row in range(seq.shape[0]):
            last = seq.shape[1] - n - 1
            ts = torch.arange(start - 1, last)
            if ts.numel() == 0:
                continue
            offs = torch.arange(n)
            hs.append(hid[row, ts])
            reads.append(seq[row][ts[:, None] + 1 + offs])
            targets.append(seq[row][ts[:, None] + 2 + offs])
    return torch.cat(hs), torch.cat(reads), torch.cat(targets)


def head_accuracy(logits: list[torch.Tensor], targets: torch.Tensor) -> list[float]:
    """Top-1 accuracy of each draft head (rounded), ``targets [N, n]``."""
    return [
        round((lg.argmax(-1) == targets[:, k]).float().mean().item(), 3)
        for k, lg in enumerate(logits)
    ]


@torch.no_grad()
def held_out_scores(model: torch.nn.Module, val, chunk: int = 8192) -> tuple[list[float], float]:
    """Per-head top-1 accuracy and the mean accepted draft length over the held-out windows.

    The accepted length of a window is the number of leading heads that are right: greedy
    verification keeps a draft only up to its first wrong token, so a later head that is
    right after a wrong one gains nothing. That length, not the per-head accuracy, is what
    serving turns into speed, and it is the score the best checkpoint is chosen by.
    """
    hidden, reads, targets = val
    hits = torch.zeros(reads.shape[1], device=hidden.device)
    accepted = torch.zeros((), device=hidden.device)
    for b in range(0, hidden.shape[0], chunk):
        logits = model(hidden[b : b + chunk], reads[b : b + chunk])
        right = torch.stack(
            [lg.argmax(-1) == targets[b : b + chunk, k] for k, lg in enumerate(logits)], dim=1
        )
        hits += right.sum(0)
        accepted += right.long().cumprod(1).sum()
    n = max(hidden.shape[0], 1)
    return [round(h / n, 3) for h in hits.tolist()], round(accepted.item() / n, 3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--kind", choices=mc.KINDS, default="mlp")
    ap.add_argument("--n-predict", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=2048)
    ap.add_argument("--val-fraction", type=float, default=0.1)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--gen-len", type=int, default=128)
    ap.add_argument("--gen-batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    hidden, vocab, archs = mc.target_shape(Path(args.target))
    t0 = time.time()
    prompts = make_prompts(vocab, args.prompts, args.prompt_len, args.seed)
    n_val = max(1, int(len(prompts) * args.val_fraction))
    val_prompts, prompts = prompts[:n_val], prompts[n_val:]
    seqs, states, starts = collect(args.target, prompts, args.gen_len, args.gen_batch, device)
    H, reads, targets = training_windows(seqs, states, starts, args.n_predict)
    val = training_windows(
        *collect(args.target, val_prompts, args.gen_len, args.gen_batch, device), args.n_predict
    )
    print(
        f"collected {H.shape[0]} training and {val[0].shape[0]} held-out windows "
        f"in {time.time() - t0:.0f} s",
        flush=True,
    )

    config = mc.speculator_config(
        args.kind,
        hidden=hidden,
        vocab=vocab,
        width=hidden,
        n_predict=args.n_predict,
        tie_weights=args.kind == "lstm",
        scale_input=True,
        base_model_archs=archs,
    )
    model = TrainableSpeculator(config, mc.random_state(config, args.seed)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)
    H, reads, targets = H.to(device), reads.to(device), targets.to(device)
    val = tuple(t.to(device) for t in val)
    gen = torch.Generator(device=device).manual_seed(args.seed)
    history: list[dict] = []
    best: dict | None = None
    best_state: dict[str, torch.Tensor] = {}
    for step in range(args.steps):
        idx = torch.randint(0, H.shape[0], (args.batch,), device=device, generator=gen)
        logits = model(H[idx], reads[idx])
        loss = sum(F.cross_entropy(lg, targets[idx, k]) for k, lg in enumerate(logits)) / len(
            logits
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % args.eval_every == 0 or step == args.steps - 1:
            acc = head_accuracy(logits, targets[idx])
            val_acc, val_accepted = held_out_scores(model, val)
            history.append(
                {
                    "step": step,
                    "loss": loss.item(),
                    "train_top1": acc,
                    "val_top1": val_acc,
                    "val_accepted": val_accepted,
                }
            )
            print(
                f"step {step} loss {loss.item():.3f} top-1 per head: train {acc}, "
                f"held out {val_acc}, held-out accepted per draft {val_accepted}",
                flush=True,
            )
            # Early stopping: the speculator overfits its training windows (held-out
            # accuracy peaks and falls while training accuracy climbs), so the written
            # checkpoint is the evaluation with the best held-out accepted length.
            if best is None or val_accepted > best["val_accepted"]:
                best = dict(history[-1])
                best_state = model.state_dict_out()
    mc.write_checkpoint(args.out, config, best_state)
    (args.out / "training.json").write_text(
        json.dumps(
            {
                "args": {k: str(v) for k, v in vars(args).items()},
                "seconds": time.time() - t0,
                "windows": {"train": int(H.shape[0]), "held_out": int(val[0].shape[0])},
                "history": history,
                "best": best,
            },
            indent=2,
        )
    )
    print(f"wrote {args.out} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
