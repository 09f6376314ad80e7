"""Fixtures for the RL / memory feature tests: real vLLM objects on the CPU.

vLLM layers look up the current ``VllmConfig`` and the tensor-parallel group
when they are built, so a one-rank gloo group is started once per session
(only if no other test started one) and layers are built inside
``set_current_vllm_config``. This box has no GPU, so the config names the CPU
device explicitly (vLLM cannot infer it).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("vllm")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def reverted_patches() -> Iterator[None]:
    """Patches the test applies to live vLLM classes are reverted after it."""
    from arctic_inference.patching import reverting_new_patches

    with reverting_new_patches():
        yield


@pytest.fixture(scope="session")
def cpu_vllm_config():
    """A VllmConfig on the CPU device with a one-rank TP group initialised."""
    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import (
        init_distributed_environment,
        initialize_model_parallel,
        model_parallel_is_initialized,
    )

    config = VllmConfig(device_config=DeviceConfig(device="cpu"))
    with set_current_vllm_config(config):
        if not model_parallel_is_initialized():
            init_distributed_environment(
                world_size=1,
                rank=0,
                local_rank=0,
                distributed_init_method=f"tcp://127.0.0.1:{_free_port()}",
                backend="gloo",
            )
            initialize_model_parallel(1, 1)
    return config


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
