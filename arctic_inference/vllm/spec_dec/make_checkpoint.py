"""Write Arctic speculator checkpoints with random weights, in the public format.

For tests (tiny shapes on the CPU) and as the starting point of training.
The target decides the shape: ``--target DIR`` reads its ``config.json`` for
``hidden_size``, ``vocab_size`` and ``architectures``; without it ``--hidden``
and ``--vocab`` give them.

    python -m arctic_inference.vllm.spec_dec.make_checkpoint OUT --kind mlp \\
        --target /models/small-llama --n-predict 3

Tensor names (``model.safetensors``):

* mlp: ``emb.{i}.weight [V, W]``, ``proj.{i}.weight [W, H or W]``,
  ``ln.{i}.weight/bias [W]``, ``head.{i}.weight [V, W]``; tied checkpoints
  keep index 0 (and ``proj.1``) only.
* lstm (``sum_lstm``, tied): ``forget_emb.0.weight [V, W]``,
  ``{forget,input,output,cell}_proj.{0,1}.weight [W, H or W]``,
  ``cell_ln.0.*``/``state_ln.0.*`` ``[W]``, ``head.0.weight [V, W]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from arctic_inference.vllm.spec_dec.config import (
    LSTM_ARCH,
    MLP_ARCH,
    MODEL_TYPE,
    SpeculatorConfigError,
    parse_speculator_config,
)

KINDS = ("mlp", "lstm")


def speculator_config(
    kind: str,
    *,
    hidden: int,
    vocab: int,
    width: int,
    n_predict: int,
    tie_weights: bool,
    scale_input: bool,
    base_model_archs: list[str],
) -> dict:
    """The ``config.json`` of a speculator of this kind and shape."""
    common = dict(
        model_type=MODEL_TYPE,
        vocab_size=vocab,
        n_predict=n_predict,
        top_k_tokens_per_head=[1] * n_predict,
        n_candidates=n_predict,
        tie_weights=tie_weights,
        scale_input=scale_input,
        base_model_archs=base_model_archs,
    )
    if kind == "mlp":
        return dict(architectures=[MLP_ARCH], emb_dim=hidden, inner_dim=width, **common)
    return dict(
        architectures=[LSTM_ARCH],
        method="sum_lstm",
        input_hidden_dim=hidden,
        emb_dim=str(width),
        inner_dim=str(width),
        proj_dim=str(width),
        tie_lstm_embs=True,
        **common,
    )


def random_state(config: dict, seed: int, std: float = 0.02) -> dict[str, torch.Tensor]:
    """Random weights named as the checkpoint names them (float32)."""
    spec = parse_speculator_config(config)
    gen = torch.Generator().manual_seed(seed)

    def normal(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen) * std

    def norm(prefix: str) -> dict[str, torch.Tensor]:
        return {
            f"{prefix}.weight": 1 + normal(spec.width) * 5,
            f"{prefix}.bias": normal(spec.width),
        }

    V, W, H = spec.vocab_size, spec.width, spec.hidden_dim
    state: dict[str, torch.Tensor] = {}
    shared = 1 if spec.tie_weights else spec.n_predict
    projs = 2 if spec.tie_weights else spec.n_predict
    if spec.is_lstm:
        state["forget_emb.0.weight"] = normal(V, W)
        for gate in ("forget", "input", "output", "cell"):
            for stage in range(2):
                state[f"{gate}_proj.{stage}.weight"] = normal(W, H if stage == 0 else W)
        state.update(norm("cell_ln.0"))
        state.update(norm("state_ln.0"))
        state["head.0.weight"] = normal(V, W)
        return state
    for i in range(shared):
        state[f"emb.{i}.weight"] = normal(V, W)
        state.update(norm(f"ln.{i}"))
        state[f"head.{i}.weight"] = normal(V, W)
    for i in range(projs):
        state[f"proj.{i}.weight"] = normal(W, H if i == 0 else W)
    return state


def write_checkpoint(out: Path, config: dict, state: dict[str, torch.Tensor]) -> Path:
    """Write ``config.json`` and ``model.safetensors`` into ``out`` (created)."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in state.items()}, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return out


def target_shape(target: Path) -> tuple[int, int, list[str]]:
    """(hidden size, vocab size, architectures) of a Hugging Face checkpoint folder."""
    path = target / "config.json"
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise SpeculatorConfigError(f"cannot read the target config {path}: {err}") from None
    try:
        return int(cfg["hidden_size"]), int(cfg["vocab_size"]), list(cfg["architectures"])
    except (KeyError, TypeError, ValueError):
        raise SpeculatorConfigError(
            f"{path} lacks hidden_size, vocab_size or architectures; is it a causal LM?"
        ) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--kind", choices=KINDS, default="mlp")
    parser.add_argument("--target", type=Path, help="checkpoint folder of the target model")
    parser.add_argument("--hidden", type=int, help="target hidden size (without --target)")
    parser.add_argument("--vocab", type=int, help="vocabulary size (without --target)")
    parser.add_argument("--arch", default="LlamaForCausalLM", help="target arch (without --target)")
    parser.add_argument("--width", type=int, help="speculator width (default: the hidden size)")
    parser.add_argument("--n-predict", type=int, default=3)
    parser.add_argument("--untied", action="store_true", help="one set of weights per head")
    parser.add_argument("--scale-input", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        if args.target is not None:
            hidden, vocab, archs = target_shape(args.target)
        elif args.hidden and args.vocab:
            hidden, vocab, archs = args.hidden, args.vocab, [args.arch]
        else:
            raise SpeculatorConfigError("give --target DIR, or both --hidden and --vocab")
        tied = not args.untied
        if args.kind == "lstm" and not tied:
            raise SpeculatorConfigError("the LSTM speculator is always tied; drop --untied")
        config = speculator_config(
            args.kind,
            hidden=hidden,
            vocab=vocab,
            width=args.width or hidden,
            n_predict=args.n_predict,
            tie_weights=tied,
            scale_input=args.scale_input,
            base_model_archs=archs,
        )
        state = random_state(config, args.seed)
    except SpeculatorConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    write_checkpoint(args.out, config, state)
    print(f"wrote {args.kind} speculator ({len(state)} tensors) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
