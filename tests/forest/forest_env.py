"""Shared helpers of the forest tests (a module name no other test folder uses)."""

from __future__ import annotations

from pathlib import Path


def cpu_config(model_dir: Path | None = None, **arctic):
    """A VllmConfig on the CPU; ``arctic`` goes to ``additional_config["arctic"]``."""
    from vllm.config import DeviceConfig, ModelConfig, VllmConfig

    kwargs = {}
    if model_dir is not None:
        kwargs["model_config"] = ModelConfig(
            model=str(model_dir), skip_tokenizer_init=True, max_model_len=8192
        )
    return VllmConfig(
        device_config=DeviceConfig(device="cpu"),
        additional_config={"arctic": arctic} if arctic else {},
        **kwargs,
    )
