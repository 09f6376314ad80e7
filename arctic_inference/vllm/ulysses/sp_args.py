"""The engine options of sequence and shift parallelism, defined without importing vLLM.

``patch_set`` imports this module at plugin load to register the flags. The
values are read per config (:func:`sp_size`, :func:`shift_settings`) because
several engines may share one process.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from arctic_inference.vllm.args import ArcticArg

__all__ = [
    "ENABLE_SHIFT_PARALLEL",
    "SHIFT_PARALLEL_THRESHOLD",
    "ULYSSES_SEQUENCE_PARALLEL_SIZE",
    "ShiftSettings",
    "shift_settings",
    "sp_size",
    "ulysses_on",
]

ULYSSES_SEQUENCE_PARALLEL_SIZE = ArcticArg(
    name="ulysses_sequence_parallel_size",
    type=int,
    default=1,
    minimum=1,
    env="ARCTIC_ULYSSES_SEQUENCE_PARALLEL_SIZE",
    help="Arctic Ulysses sequence parallelism: split each step's tokens over N ranks "
    "outside attention and its heads over them inside it. The engine runs "
    "tensor_parallel_size x N workers per pipeline stage; 1 is off.",
)

ENABLE_SHIFT_PARALLEL = ArcticArg(
    name="enable_shift_parallel",
    type=bool,
    default=False,
    env="ARCTIC_ENABLE_SHIFT_PARALLEL",
    help="Shift parallelism (needs --ulysses-sequence-parallel-size > 1): steps with "
    "fewer scheduled tokens than --shift-parallel-threshold run as plain tensor "
    "parallelism over all SP x TP ranks instead of the SP layout.",
)

SHIFT_PARALLEL_THRESHOLD = ArcticArg(
    name="shift_parallel_threshold",
    type=int,
    default=512,
    minimum=1,
    env="ARCTIC_SHIFT_PARALLEL_THRESHOLD",
    help="With shift parallelism: a step with at least this many scheduled tokens "
    "runs in the SP layout, a smaller one in folded tensor parallelism.",
)

ARGS: tuple[ArcticArg, ...] = (
    ULYSSES_SEQUENCE_PARALLEL_SIZE,
    ENABLE_SHIFT_PARALLEL,
    SHIFT_PARALLEL_THRESHOLD,
)


@dataclasses.dataclass(frozen=True)
class ShiftSettings:
    enabled: bool
    threshold: int


def sp_size(vllm_config: Any | None) -> int:
    """The sequence-parallel size this config asks for (1: off)."""
    return int(ULYSSES_SEQUENCE_PARALLEL_SIZE.value_for(vllm_config))


def shift_settings(vllm_config: Any | None) -> ShiftSettings:
    return ShiftSettings(
        enabled=bool(ENABLE_SHIFT_PARALLEL.value_for(vllm_config)),
        threshold=int(SHIFT_PARALLEL_THRESHOLD.value_for(vllm_config)),
    )


def ulysses_on(ctx: Any) -> bool:
    """Worker-side predicate (``PatchContext``): only a config with SP > 1 needs the patches."""
    return sp_size(ctx.vllm_config) > 1
