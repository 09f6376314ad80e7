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
def tiny_llama_dir(tmp_path_factory) -> Path:
    """A config-only Llama checkpoint (vLLM plans without weights)."""
    from transformers import LlamaConfig

    path = tmp_path_factory.mktemp("forest-llama")
    LlamaConfig(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
    ).save_pretrained(path)
    return path


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
