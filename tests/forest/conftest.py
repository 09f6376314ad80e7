"""Fixtures for the forest tests: real vLLM 0.26.0 objects on the CPU."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("vllm")
sys.path.insert(0, str(Path(__file__).parent))

from forest_env import cpu_config  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def reverted_patches() -> Iterator[None]:
    from arctic_inference.patching import reverting_new_patches

    with reverting_new_patches():
        yield


@pytest.fixture(scope="session")
def tiny_llama_dir(config_only_llama) -> Path:
    """A config-only Llama checkpoint with an 8k context (vLLM plans without weights)."""
    return config_only_llama(8192)


@pytest.fixture(scope="session")
def distributed_cpu() -> None:
    """A one-rank gloo group (vLLM's builders look up parallel groups)."""
    from vllm.config import set_current_vllm_config
    from vllm.distributed import (
        init_distributed_environment,
        initialize_model_parallel,
        model_parallel_is_initialized,
    )

    with set_current_vllm_config(cpu_config()):
        if not model_parallel_is_initialized():
            init_distributed_environment(
                world_size=1,
                rank=0,
                local_rank=0,
                distributed_init_method=f"tcp://127.0.0.1:{_free_port()}",
                backend="gloo",
            )
            initialize_model_parallel(1, 1)


@pytest.fixture(autouse=True)
def no_forest_env(monkeypatch) -> None:
    monkeypatch.delenv("ARCTIC_FOREST_CASCADE_ATTN_CONFIGS", raising=False)
