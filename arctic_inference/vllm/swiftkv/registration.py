"""Make ``llama_swiftkv`` checkpoints loadable: HF config and vLLM model class.

Run in every process the plugin loads in (front end, engine core, workers),
because each resolves the config or builds the model itself. The model class
is registered by import path so that registering imports no torch/CUDA code.
"""

from __future__ import annotations

from typing import Any

MODEL_PATH = "arctic_inference.vllm.swiftkv.model:LlamaSwiftKVForCausalLM"


def register_swiftkv(ctx: Any = None) -> None:
    """Register the config with ``AutoConfig`` and the model with ``ModelRegistry``."""
    from transformers import AutoConfig
    from vllm import ModelRegistry

    from arctic_inference.vllm.swiftkv.config import (
        ARCHITECTURE,
        MODEL_TYPE,
        LlamaSwiftKVConfig,
    )

    AutoConfig.register(MODEL_TYPE, LlamaSwiftKVConfig, exist_ok=True)
    ModelRegistry.register_model(ARCHITECTURE, MODEL_PATH)
