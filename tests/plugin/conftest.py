"""Guard for the plugin tests: no test module may leave a vLLM class patched."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from arctic_inference.patching import applied_patches


@pytest.fixture(autouse=True, scope="module")
def no_patch_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    before = applied_patches()
    yield
    # Patches on vLLM only: throwaway classes defined inside tests cannot leak.
    leaked = [
        r.describe()
        for r in applied_patches()
        if r not in before and r.target.split(".")[0] == "vllm"
    ]
    assert not leaked, f"{request.module.__name__} left patches applied: {leaked}"
