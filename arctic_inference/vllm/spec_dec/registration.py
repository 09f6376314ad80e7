"""Make Arctic speculator checkpoints loadable by vLLM's ``ModelRegistry``.

The checkpoints' ``model_type`` is ``mlp_speculator``, whose config class vLLM
already knows; only the architectures are new. Registered by import path so
that registering imports no torch/CUDA code; run in every process the plugin
loads in, because each may resolve the draft model's architecture.
"""

from __future__ import annotations

from typing import Any

from arctic_inference.vllm.spec_dec.config import LEGACY_LSTM_ARCH, LSTM_ARCH, MLP_ARCH

MODULE = "arctic_inference.vllm.spec_dec.model"
MODEL_PATHS = {
    MLP_ARCH: f"{MODULE}:ArcticMLPSpeculator",
    LSTM_ARCH: f"{MODULE}:ArcticLSTMSpeculator",
    LEGACY_LSTM_ARCH: f"{MODULE}:ArcticLSTMSpeculator",
}


def register_speculators(ctx: Any = None) -> None:
    """Register the three speculator architectures with vLLM."""
    from vllm import ModelRegistry

    for arch, path in MODEL_PATHS.items():
        ModelRegistry.register_model(arch, path)
