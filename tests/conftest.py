"""Suite-wide pytest hooks: GPU tests run only where CUDA is available, and no test
module leaves a vLLM class patched for the next one."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

import pytest


@functools.cache
def _cuda_available() -> bool:
    # Imported lazily and only when a gpu-marked test was collected, so a run
    # without GPU tests never pays for importing torch.
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items or _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(autouse=True)
def no_arctic_env_leaks() -> Iterator[None]:
    """Put the ``ARCTIC_*`` environment back after each test.

    The plugin mirrors its resolved values into ``ARCTIC_*`` variables so worker
    processes inherit them (``args.mirror_to_env``); a test that loads the plugin with a
    feature on would otherwise turn it on for every later test (and their child
    processes) that reads the variable.
    """
    before = {k: v for k, v in os.environ.items() if k.startswith("ARCTIC_")}
    yield
    for key in [k for k in os.environ if k.startswith("ARCTIC_")]:
        if key not in before:
            del os.environ[key]
    os.environ.update(before)


@pytest.fixture(autouse=True, scope="module")
def no_patch_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the module that leaves a vLLM class patched (later modules would see it)."""
    from arctic_inference.patching import applied_patches

    before = applied_patches()
    yield
    # Patches on vLLM only: throwaway classes defined inside tests cannot leak.
    leaked = [
        r.describe()
        for r in applied_patches()
        if r not in before and r.target.split(".")[0] == "vllm"
    ]
    assert not leaked, f"{request.module.__name__} left patches applied: {leaked}"


@pytest.fixture(scope="session")
def config_only_llama(tmp_path_factory):
    """Make (once per context length) a config-only Llama checkpoint folder.

    vLLM plans engines, schedulers and block tables from the config alone, so CPU tests
    need no weights; suites differ only in the context length they plan for.
    """
    made: dict[int, object] = {}

    def make(max_position_embeddings: int):
        if max_position_embeddings not in made:
            from transformers import LlamaConfig

            path = tmp_path_factory.mktemp(f"llama-ctx{max_position_embeddings}")
            LlamaConfig(
                vocab_size=256,
                hidden_size=64,
                intermediate_size=128,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                max_position_embeddings=max_position_embeddings,
            ).save_pretrained(path)
            made[max_position_embeddings] = path
        return made[max_position_embeddings]

    return make


@pytest.fixture
def reverted_patches() -> Iterator[None]:
    """Patches the test applies to live vLLM classes are reverted after it."""
    from arctic_inference.patching import reverting_new_patches

    with reverting_new_patches():
        yield


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def one_rank_group() -> None:
    """vLLM's distributed state with one CPU rank on gloo (layers and builders look up
    their parallel groups); set up once per session, whichever suite asks first."""
    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import (
        init_distributed_environment,
        initialize_model_parallel,
        model_parallel_is_initialized,
    )

    with set_current_vllm_config(VllmConfig(device_config=DeviceConfig(device="cpu"))):
        if not model_parallel_is_initialized():
            init_distributed_environment(
                world_size=1,
                rank=0,
                local_rank=0,
                distributed_init_method=f"tcp://127.0.0.1:{_free_port()}",
                backend="gloo",
            )
            initialize_model_parallel(1, 1)
