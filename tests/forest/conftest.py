"""Fixtures for the forest tests: real vLLM 0.26.0 objects on the CPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm")
sys.path.insert(0, str(Path(__file__).parent))  # the tests import forest_env


@pytest.fixture(scope="session")
def tiny_llama_dir(config_only_llama) -> Path:
    """A config-only Llama checkpoint with an 8k context (vLLM plans without weights)."""
    return config_only_llama(8192)


@pytest.fixture(scope="session")
def distributed_cpu(one_rank_group) -> None:
    """A one-rank gloo group (vLLM's builders look up parallel groups)."""


@pytest.fixture(autouse=True)
def no_forest_env(monkeypatch) -> None:
    monkeypatch.delenv("ARCTIC_FOREST_CASCADE_ATTN_CONFIGS", raising=False)
