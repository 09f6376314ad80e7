"""Typed accessors for the environment variables that steer Arctic Inference.

Values are read on every call (never cached) because vLLM starts engine-core
and worker processes that inherit the environment at spawn time; reading
lazily means a process always sees what its parent exported.
"""

from __future__ import annotations

import os

from arctic_inference.utils import parse_bool

ENABLED = "ARCTIC_INFERENCE_ENABLED"
SKIP_PLATFORM_CHECK = "ARCTIC_INFERENCE_SKIP_PLATFORM_CHECK"
SKIP_VERSION_CHECK = "ARCTIC_INFERENCE_SKIP_VERSION_CHECK"
SKIP_RUNTIME_CHECK = "ARCTIC_INFERENCE_SKIP_RUNTIME_CHECK"

# name -> (default, one-line description); the README table is built from this.
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    ENABLED: ("0", "Set to 1 to turn the plugin on; otherwise vLLM runs unmodified."),
    SKIP_PLATFORM_CHECK: (
        "0",
        "Set to 1 to load on a platform other than NVIDIA CUDA (unsupported; for tests).",
    ),
    SKIP_VERSION_CHECK: (
        "0",
        "Set to 1 to patch a vLLM other than the pinned version (at your own risk).",
    ),
    SKIP_RUNTIME_CHECK: (
        "0",
        "Set to 1 to only warn (not fail) when vLLM instantiated an unpatched class.",
    ),
}


def _flag(name: str) -> bool:
    return parse_bool(os.environ.get(name, "0"), source=name)


def enabled() -> bool:
    """Whether the operator turned the plugin on."""
    return _flag(ENABLED)


def skip_platform_check() -> bool:
    return _flag(SKIP_PLATFORM_CHECK)


def skip_version_check() -> bool:
    return _flag(SKIP_VERSION_CHECK)


def skip_runtime_check() -> bool:
    return _flag(SKIP_RUNTIME_CHECK)
