"""Fixtures for the RL / memory feature tests: real vLLM objects on the CPU.

vLLM layers look up the current ``VllmConfig`` and the tensor-parallel group
when they are built, so a one-rank gloo group is started once per session
(only if no other test started one) and layers are built inside
``set_current_vllm_config``. This box has no GPU, so the config names the CPU
device explicitly (vLLM cannot infer it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("vllm")


@pytest.fixture(scope="session")
def cpu_vllm_config(one_rank_group):
    """A VllmConfig on the CPU device with a one-rank TP group initialised."""
    from vllm.config import DeviceConfig, VllmConfig

    return VllmConfig(device_config=DeviceConfig(device="cpu"))


@pytest.fixture
def in_vllm_config(cpu_vllm_config) -> Iterator[object]:
    """Run the test body inside ``set_current_vllm_config`` (layers need it)."""
    from vllm.config import set_current_vllm_config

    with set_current_vllm_config(cpu_vllm_config):
        yield cpu_vllm_config


@pytest.fixture(scope="session")
def tiny_llama_dir(config_only_llama) -> Path:
    """A config-only Llama checkpoint directory (vLLM needs no weights to plan)."""
    return config_only_llama(512)
