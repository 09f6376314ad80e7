"""Suite-wide pytest hooks: GPU tests run only where CUDA is available."""

from __future__ import annotations

import functools

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
