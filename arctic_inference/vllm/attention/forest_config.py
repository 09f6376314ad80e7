"""The ``--forest-cascade-attn-configs`` knob: a JSON object of grouping knobs.

Given three ways like every Arctic arg (CLI flag, ``additional_config={"arctic":
{"forest_cascade_attn_configs": ...}}``, env ``ARCTIC_FOREST_CASCADE_ATTN_CONFIGS``).
The value is a JSON object written as a string, everywhere (CLI, env,
``additional_config``). An empty object ``{}`` turns the feature on with every default;
an absent value leaves it off: the forked FlashAttention (installed whenever the plugin
is on) then runs upstream's code path. Bad JSON or an unknown key is a ``ValueError``
naming the key and the known ones, raised when the engine config is built.

This module must stay light (no vLLM, no torch): ``patch_set`` imports it at plugin load.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from arctic_inference.vllm.args import ArcticArg

__all__ = [
    "FOREST_CASCADE_ATTN_CONFIGS",
    "ForestConfig",
    "forest_config_for",
    "forest_on",
    "parse_forest_config",
]

FOREST_CASCADE_ATTN_CONFIGS = ArcticArg(
    name="forest_cascade_attn_configs",
    type=str,
    default=None,
    env="ARCTIC_FOREST_CASCADE_ATTN_CONFIGS",
    help="Forest Cascade Attention as a JSON object of knobs, e.g. "
    "'{\"max_query_len\": 16, \"min_group_size\": 2}' ('{}' = defaults): requests "
    "whose leading KV blocks are the same physical blocks attend to that shared prefix "
    "in one grouped FlashAttention call. Knobs: max_query_len, min_group_size, "
    "min_additional_prefix_blocks, min_non_singleton_fraction, max_non_singleton_groups, "
    "full_cuda_graphs (false: grouped decode steps run piecewise CUDA graphs). "
    "Absent: the FlashAttention fork runs upstream's code path.",
    check=lambda value: _validate(value),
)

#: The minimum batch size the feature considers (fewer requests gain too little).
MIN_REQUESTS = 8


@dataclasses.dataclass(frozen=True)
class ForestConfig:
    """Knobs of the grouping; defaults suit decode-heavy rollout batches.

    ``max_query_len``: largest per-request query length of a batch that is grouped;
    longer (prefill) batches run upstream attention, where the prefix read is amortised
    over many query tokens anyway.
    ``min_group_size``: fewest requests that make a group (a shared read for one
    request saves nothing).
    ``min_additional_prefix_blocks``: a group must share at least this many more KV
    blocks than the group it was split from (the whole batch counts as sharing 0), so a
    split that re-reads the parent's prefix once more buys at least this much.
    ``min_non_singleton_fraction``: share of the batch's requests that must sit in
    groups; below it the extra kernel launches are not worth it.
    ``max_non_singleton_groups``: most groups in one batch; the groups saving the most
    KV reads are kept, the rest of their requests run ungrouped.
    ``full_cuda_graphs``: in an engine whose decode steps run full CUDA graphs (and
    whose mixed steps do not), plan single-token decode steps with static shapes in
    persistent buffers (:mod:`.static_plan`), so the full decode graphs hold the forest
    kernels and grouped decode steps replay them; off, grouped steps run piecewise.
    Opt-in until measured on the GPU: the captured graphs run the forest kernels on
    every decode step, grouped or not.
    """

    max_query_len: int = 16
    min_group_size: int = 2
    min_additional_prefix_blocks: int = 1
    min_non_singleton_fraction: float = 0.25
    max_non_singleton_groups: int = 256
    full_cuda_graphs: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.full_cuda_graphs, bool):
            raise ValueError(
                f"forest_cascade_attn_configs: full_cuda_graphs must be true or false, "
                f"got {self.full_cuda_graphs!r}."
            )
        for name in ("max_query_len", "min_additional_prefix_blocks", "max_non_singleton_groups"):
            _require_int(name, getattr(self, name), minimum=1)
        _require_int("min_group_size", self.min_group_size, minimum=2)
        fraction = self.min_non_singleton_fraction
        if (
            isinstance(fraction, bool)
            or not isinstance(fraction, (int, float))
            or not 0.0 <= fraction <= 1.0
        ):
            raise ValueError(
                f"forest_cascade_attn_configs: min_non_singleton_fraction must be a number "
                f"in [0, 1], got {fraction!r}."
            )
        object.__setattr__(self, "min_non_singleton_fraction", float(fraction))


def _require_int(name: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(
            f"forest_cascade_attn_configs: {name} must be an integer >= {minimum}, got {value!r}."
        )


KNOWN_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ForestConfig))


def parse_forest_config(raw: str | Mapping[str, Any] | None) -> ForestConfig | None:
    """The config for ``raw`` (JSON text or a mapping); None when the knob is absent."""
    if raw is None:
        return None
    if isinstance(raw, str):
        if not raw.strip():
            return None
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"forest_cascade_attn_configs is not valid JSON ({exc.msg} at position "
                f"{exc.pos}): {raw!r}; give a JSON object such as '{{\"min_group_size\": 2}}'."
            ) from None
    else:
        data = raw
    if not isinstance(data, Mapping):
        raise ValueError(
            f"forest_cascade_attn_configs must be a JSON object of knobs, got {data!r}; "
            f"known keys: {', '.join(KNOWN_KEYS)}."
        )
    unknown = sorted(set(data) - set(KNOWN_KEYS))
    if unknown:
        raise ValueError(
            f"forest_cascade_attn_configs has unknown key(s) {', '.join(map(repr, unknown))}; "
            f"known keys: {', '.join(KNOWN_KEYS)}."
        )
    return ForestConfig(**dict(data))


def _validate(value: str) -> None:
    # ArcticArg prefixes where the value came from and ends the sentence itself.
    try:
        parse_forest_config(value)
    except ValueError as exc:
        raise ValueError(str(exc).rstrip(".")) from None


def forest_config_for(vllm_config: Any | None) -> ForestConfig | None:
    """The forest config of an engine config (None: the feature is off)."""
    return parse_forest_config(FOREST_CASCADE_ATTN_CONFIGS.value_for(vllm_config))


def forest_on(ctx: Any) -> bool:
    """Worker-side predicate (``PatchContext``): the config asks for forest attention."""
    return forest_config_for(ctx.vllm_config) is not None
