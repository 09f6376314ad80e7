"""Real vLLM 0.26.0 configs for the sequence-parallel tests (CPU, no weights)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")


@pytest.fixture(scope="session")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int, int], Path]:
    """A config-only Llama with the given query and KV head counts."""
    made: dict[tuple[int, int], Path] = {}

    def make(heads: int, kv_heads: int) -> Path:
        if (heads, kv_heads) not in made:
            from transformers import LlamaConfig

            path = tmp_path_factory.mktemp(f"llama-h{heads}-kv{kv_heads}")
            LlamaConfig(
                vocab_size=256,
                hidden_size=16 * heads,
                intermediate_size=128,
                num_hidden_layers=2,
                num_attention_heads=heads,
                num_key_value_heads=kv_heads,
                max_position_embeddings=1024,
            ).save_pretrained(path)
            made[(heads, kv_heads)] = path
        return made[(heads, kv_heads)]

    return make


@pytest.fixture
def build_config(
    llama_dir: Callable[[int, int], Path], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Any]:
    """A real ``VllmConfig`` for a tiny Llama, Arctic values in ``additional_config``."""
    from vllm.config import (
        CompilationConfig,
        DeviceConfig,
        ModelConfig,
        ParallelConfig,
        VllmConfig,
    )

    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")
    for name in (
        "ARCTIC_ULYSSES_SEQUENCE_PARALLEL_SIZE",
        "ARCTIC_ENABLE_SHIFT_PARALLEL",
        "ARCTIC_SHIFT_PARALLEL_THRESHOLD",
        "TORCH_COMPILE_DISABLE",
        "VLLM_USE_BREAKABLE_CUDAGRAPH",
        "ARCTIC_FOREST_CASCADE_ATTN_CONFIGS",
    ):
        monkeypatch.delenv(name, raising=False)

    def build(
        heads: int = 8,
        kv_heads: int = 2,
        arctic: dict[str, Any] | None = None,
        enforce_eager: bool = True,
        compilation: dict[str, Any] | None = None,
        **parallel: Any,
    ) -> Any:
        extra = (
            {} if compilation is None else {"compilation_config": CompilationConfig(**compilation)}
        )
        return VllmConfig(
            model_config=ModelConfig(
                model=str(llama_dir(heads, kv_heads)),
                skip_tokenizer_init=True,
                enforce_eager=enforce_eager,
            ),
            device_config=DeviceConfig(device="cpu"),
            parallel_config=ParallelConfig(**parallel),
            additional_config={"arctic": arctic or {}},
            **extra,
        )

    return build
