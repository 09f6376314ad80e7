"""Fixtures for the speculator CPU tests: tiny random checkpoints and the real vLLM classes.

Models are resolved through vLLM's ``ModelRegistry`` from the checkpoint's
``config.json`` (as the engine does) and built on the CPU inside the current
``VllmConfig`` with the one-rank gloo group that vLLM's parallel layers need.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("vllm")

HIDDEN = 64
VOCAB = 300


class ManualClock:
    """A clock that moves only when a test sets ``now``: timed code sees the times the
    test chose."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_spec_ckpt(root: Path, name: str, kind: str = "mlp", **fields) -> Path:
    """A random speculator for a 64-wide, 300-token Llama; ``fields`` override the config."""
    from arctic_inference.vllm.spec_dec import make_checkpoint as mc

    tie = fields.pop("tie_weights", kind == "lstm")
    width = fields.pop("width", 48 if kind == "mlp" else HIDDEN)
    config = mc.speculator_config(
        kind,
        hidden=HIDDEN,
        vocab=VOCAB,
        width=width,
        n_predict=fields.pop("n_predict", 3),
        tie_weights=tie,
        scale_input=fields.pop("scale_input", True),
        base_model_archs=["LlamaForCausalLM"],
    )
    state = mc.random_state(config, seed=fields.pop("seed", 0))
    config.update(fields)
    return mc.write_checkpoint(root / name, config, state)


@pytest.fixture(scope="session")
def registered():
    from arctic_inference.vllm.spec_dec.registration import register_speculators

    register_speculators()


@pytest.fixture(scope="session")
def spec_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("speculators")


def draft_model_config(ckpt: Path):
    from vllm.config import ModelConfig

    return ModelConfig(
        model=str(ckpt),
        runner="draft",
        dtype="float32",
        max_model_len=256,
        skip_tokenizer_init=True,
        tokenizer=str(ckpt),
    )


def build_speculator(ckpt: Path, load: bool = True):
    """(model, names the checkpoint loaded) for the architecture the registry resolves."""
    import torch
    from safetensors.torch import load_file
    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.model_executor.models.registry import ModelRegistry

    model_config = draft_model_config(ckpt)
    cls, _ = ModelRegistry.resolve_model_cls(model_config.architectures, model_config=model_config)
    cfg = VllmConfig(model_config=model_config, device_config=DeviceConfig(device="cpu"))
    with set_current_vllm_config(cfg), torch.device("cpu"):
        model = cls(vllm_config=cfg)
    loaded = (
        model.load_weights(load_file(str(ckpt / "model.safetensors")).items()) if load else set()
    )
    return model, loaded
