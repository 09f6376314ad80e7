"""The ``llama_swiftkv`` Hugging Face config.

Field names follow the released ``Snowflake/Llama-3.1-SwiftKV-*`` checkpoints:
``num_key_value_layers`` is the number of bottom layers that compute their own
keys and values (absent or null: all layers, i.e. SwiftKV off). Each layer from
that index up carries ``q_proj_swiftkv``/``k_proj_swiftkv``/``v_proj_swiftkv``
and the model carries ``norm_swiftkv``. Cross-layer KV sharing
(``key_value_group_size``) is not part of that format; a config asking for it
is refused rather than silently served without it.
"""

from __future__ import annotations

from typing import Any

from transformers import LlamaConfig

MODEL_TYPE = "llama_swiftkv"
ARCHITECTURE = "LlamaSwiftKVForCausalLM"


class SwiftKVConfigError(ValueError):
    """A ``llama_swiftkv`` config value that the model cannot serve."""


class LlamaSwiftKVConfig(LlamaConfig):
    """Llama config plus the SwiftKV layer boundary."""

    model_type = MODEL_TYPE

    num_key_value_layers: int | None = None
    key_value_group_size: int | None = None

    def __post_init__(self, **kwargs: Any) -> None:
        super().__post_init__(**kwargs)
        if self.num_key_value_layers is None:
            self.num_key_value_layers = self.num_hidden_layers
        validate_swiftkv_fields(self)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_swiftkv_fields(config: Any) -> None:
    """Raise :class:`SwiftKVConfigError` naming the bad field and the fix."""
    layers = config.num_hidden_layers
    n_kv = config.num_key_value_layers
    if not _is_int(n_kv) or not 1 <= n_kv <= layers:
        raise SwiftKVConfigError(
            f"llama_swiftkv config: num_key_value_layers must be an integer from 1 to "
            f"num_hidden_layers ({layers}), got {n_kv!r}; set it to the number of bottom "
            f"layers that keep their own K/V (or null for all {layers})."
        )
    group = getattr(config, "key_value_group_size", None)
    if group is not None and (not _is_int(group) or group != 1):
        raise SwiftKVConfigError(
            f"llama_swiftkv config: key_value_group_size={group!r} (KV shared across "
            "layers) is not supported; remove the field or set it to 1."
        )
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    if not _is_int(kv_heads) or kv_heads < 1 or heads % kv_heads:
        raise SwiftKVConfigError(
            f"llama_swiftkv config: num_key_value_heads={kv_heads!r} must divide "
            f"num_attention_heads={heads!r}."
        )


def num_swiftkv_layers(config: Any) -> int:
    """How many top layers take their K/V from the SwiftKV projection."""
    return config.num_hidden_layers - config.num_key_value_layers
