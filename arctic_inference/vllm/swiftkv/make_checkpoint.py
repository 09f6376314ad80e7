"""Build SwiftKV checkpoints with random weights, offline, for tests and benches.

Two sources:

* ``--base DIR``: an existing Hugging Face Llama checkpoint (for instance the
  tiny-llama / small-llama made by the GPU staging script). Its weights and
  tokenizer are kept; every layer from ``--kv-layers`` up gains
  ``q/k/v_proj_swiftkv`` (copies of its own projections plus noise) and the
  model gains ``norm_swiftkv``. The result has exactly the base model's shape,
  so the base is the plain-Llama baseline of the benchmark.
* ``--size tiny|small``: a fresh random Llama of that shape (no tokenizer
  unless ``--tokenizer-from DIR``), converted the same way.

``--kv-layers`` equal to the layer count writes a SwiftKV config with SwiftKV
switched off (no extra tensors), which must behave exactly like the base.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch

SHAPES = {
    "tiny": dict(
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
    ),
    "small": dict(
        hidden_size=2048,
        intermediate_size=5632,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
    ),
}
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
)


def random_llama(
    shape: dict, vocab_size: int, seed: int, logit_scale: float, max_positions: int = 8192
) -> tuple[dict, dict[str, torch.Tensor]]:
    """A random-weight HF Llama: (config dict, state dict in bf16)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab_size,
        max_position_embeddings=max_positions,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
        **shape,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.lm_head.weight.mul_(logit_scale)  # peaked logits: greedy ids are not near-ties
    state = {k: v.to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()}
    return cfg.to_dict(), state


def load_base(base: Path) -> tuple[dict, dict[str, torch.Tensor]]:
    """Config dict and all tensors of an HF Llama checkpoint folder."""
    from safetensors.torch import load_file

    config = json.loads((base / "config.json").read_text())
    files = sorted(base.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{base} has no *.safetensors files")
    state: dict[str, torch.Tensor] = {}
    for f in files:
        state.update(load_file(str(f)))
    return config, state


def add_swiftkv(
    config: dict, state: dict[str, torch.Tensor], kv_layers: int, seed: int, noise: float = 0.3
) -> tuple[dict, dict[str, torch.Tensor]]:
    """SwiftKV config and tensors on top of a Llama (inputs are not modified)."""
    layers = int(config["num_hidden_layers"])
    if not 1 <= kv_layers <= layers:
        raise ValueError(f"--kv-layers must be 1..{layers}, got {kv_layers}")
    out = dict(state)
    gen = torch.Generator().manual_seed(seed)
    for i in range(kv_layers, layers):
        for proj in ("q", "k", "v"):
            w = state[f"model.layers.{i}.self_attn.{proj}_proj.weight"]
            jitter = torch.randn(w.shape, generator=gen) * (noise * w.float().std())
            out[f"model.layers.{i}.self_attn.{proj}_proj_swiftkv.weight"] = (
                (w.float() + jitter).to(w.dtype).contiguous()
            )
    if kv_layers < layers:
        norm = state["model.norm.weight"]
        out["model.norm_swiftkv.weight"] = (1.0 + 0.1 * torch.randn(norm.shape, generator=gen)).to(
            norm.dtype
        )
    new_config = dict(config)
    new_config.update(
        model_type="llama_swiftkv",
        architectures=["LlamaSwiftKVForCausalLM"],
        num_key_value_layers=kv_layers,
    )
    return new_config, out


def write_checkpoint(
    out: Path, config: dict, state: dict[str, torch.Tensor], tokenizer_from: Path | None
) -> None:
    """Write config.json + model.safetensors (+ tokenizer files) into ``out``."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "model.safetensors.tmp"
    save_file(state, str(tmp), metadata={"format": "pt"})
    tmp.replace(out / "model.safetensors")
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    if tokenizer_from is not None:
        for name in TOKENIZER_FILES:
            src = tokenizer_from / name
            if src.exists():
                shutil.copyfile(src, out / name)


def build(
    out: Path,
    kv_layers: int | None,
    base: Path | None = None,
    size: str | None = None,
    seed: int = 0,
    vocab_size: int = 1000,
    logit_scale: float = 30.0,
    tokenizer_from: Path | None = None,
) -> dict:
    """Make one checkpoint; ``kv_layers`` None means half the layers. Returns its config."""
    if (base is None) == (size is None):
        raise ValueError("give exactly one of base or size")
    if base is not None:
        config, state = load_base(base)
        tokenizer_from = tokenizer_from or base
    else:
        config, state = random_llama(SHAPES[size], vocab_size, seed, logit_scale)
    layers = int(config["num_hidden_layers"])
    config, state = add_swiftkv(config, state, kv_layers or layers // 2, seed + 1)
    write_checkpoint(out, config, state, tokenizer_from)
    return config


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--base", type=Path, help="HF Llama checkpoint folder to convert")
    src.add_argument("--size", choices=sorted(SHAPES), help="fresh random Llama of this shape")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--kv-layers", type=int, default=None, help="layers that keep their own K/V (default: half)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab-size", type=int, default=1000)
    ap.add_argument("--tokenizer-from", type=Path, default=None)
    a = ap.parse_args(argv)
    try:
        cfg = build(
            a.out,
            a.kv_layers,
            base=a.base,
            size=a.size,
            seed=a.seed,
            vocab_size=a.vocab_size,
            tokenizer_from=a.tokenizer_from,
        )
    except (ValueError, FileNotFoundError, KeyError) as exc:
        print(f"make_checkpoint: {exc}", file=sys.stderr)
        return 2
    print(
        f"wrote {a.out}: {cfg['num_hidden_layers']} layers, "
        f"num_key_value_layers={cfg['num_key_value_layers']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
