"""``speculative_config={"method": "arctic", "model": PATH}`` in vLLM 0.26.0's config.

vLLM's ``SpeculativeConfig`` is a pydantic dataclass whose ``method`` is a
``Literal`` and which forbids unknown fields, so two things are needed:

* :func:`extend_speculative_config` (the feature's setup) adds ``"arctic"`` to
  the method literal and three fields, ``enable_suffix_decoding`` (the hybrid
  with suffix decoding), ``disable_by_batch_size`` (no drafts once a step
  has that many requests; arctic and suffix only) and ``disable_by_cost``
  (arctic only, on unless set false: the speculator drafts only while that
  measurably raises throughput, and in hybrid suffix drafts too,
  :mod:`.draft_gate`), then rebuilds the pydantic
  validator, so both ``LLM(speculative_config=...)`` and ``vllm serve
  --speculative-config`` accept them and still refuse misspellings.
* :class:`SpeculativeConfigArcticPatch` validates an arctic config. The
  checkpoints are ``mlp_speculator`` models, so vLLM's own post-init builds
  the draft model config when run as that method; the patch then checks the
  speculator against the target (architecture, hidden size, vocabulary,
  draft length) and refuses a bad config with one message naming the fix.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Literal, get_args

from vllm.config import SpeculativeConfig

from arctic_inference import envs
from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.spec_dec.config import (
    SpeculatorConfigError,
    check_base_model,
    parse_speculator_config,
)

ARCTIC_METHOD = "arctic"
SUFFIX_METHOD = "suffix"  # vLLM's own suffix decoding
# Methods whose drafter honours disable_by_batch_size: the arctic proposer, and
# vLLM's suffix decoding through the runner patch (spec_dec/runner.py).
BATCH_LIMITED_METHODS = (ARCTIC_METHOD, SUFFIX_METHOD)
# Fields this module adds to SpeculativeConfig: name -> (type, default).
EXTRA_FIELDS: dict[str, tuple[object, object]] = {
    "enable_suffix_decoding": (bool, False),
    "disable_by_batch_size": (int | None, None),
    # None: the method's default (on for arctic); only arctic may set it.
    "disable_by_cost": (bool | None, None),
}


def _method_type() -> object:
    return SpeculativeConfig.__dataclass_fields__["method"].type


def is_extended() -> bool:
    """Whether this process's ``SpeculativeConfig`` accepts ``method="arctic"``."""
    return ARCTIC_METHOD in _literal_values(_method_type())


def _literal_values(tp: object) -> set[str]:
    values: set[str] = set()
    for arg in get_args(tp) or ():
        if isinstance(arg, str):
            values.add(arg)
        else:
            values |= _literal_values(arg)
    return values


def extend_speculative_config(ctx: object = None) -> None:
    """Add the arctic method and the hybrid fields to vLLM's config (idempotent)."""
    if is_extended():
        return
    import vllm.config.speculative as speculative
    from pydantic.dataclasses import rebuild_dataclass

    method = Literal[ARCTIC_METHOD, speculative.SpeculativeMethod] | None  # type: ignore[valid-type]
    SpeculativeConfig.__dataclass_fields__["method"].type = method
    SpeculativeConfig.__annotations__["method"] = method
    for name, (tp, default) in EXTRA_FIELDS.items():
        if name in SpeculativeConfig.__dataclass_fields__:
            continue
        field = dataclasses.field(default=default)
        field.name, field.type = name, tp
        field._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
        SpeculativeConfig.__dataclass_fields__[name] = field
        SpeculativeConfig.__annotations__[name] = tp
        setattr(SpeculativeConfig, name, default)
    rebuild_dataclass(SpeculativeConfig, force=True)
    # The CLI derives --spec-method's choices from the field type once per class.
    from vllm.engine import arg_utils

    cached = getattr(arg_utils._compute_kwargs, "cache_clear", None)
    if cached is not None:
        cached()


def _fail(message: str) -> None:
    raise ValueError(f"speculative_config method='arctic': {message}")


def _looks_local(model: str) -> bool:
    # A hub id is "org/name"; anything path-like is checked here, before vLLM
    # would try to download it.
    return model.startswith((".", "/", "~")) or os.path.exists(os.path.expanduser(model))


class SpeculativeConfigArcticPatch(ArcticPatch[SpeculativeConfig]):
    """Validate ``method="arctic"``; refuse the hybrid fields on other methods."""

    _orig___post_init__ = SpeculativeConfig.__post_init__

    def __post_init__(self):
        hybrid = bool(getattr(self, "enable_suffix_decoding", False))
        limit = getattr(self, "disable_by_batch_size", None)
        if limit is not None and (isinstance(limit, bool) or limit < 1):
            raise ValueError(
                f"speculative_config: disable_by_batch_size={limit!r} must be a positive "
                "integer (the batch size from which no drafts are made)."
            )
        by_cost = getattr(self, "disable_by_cost", None)
        if self.method != ARCTIC_METHOD:
            if by_cost is not None:
                raise ValueError(
                    f"speculative_config: disable_by_cost is the Arctic speculator's cost "
                    f"rule; method={self.method!r} does not use it. Remove it or set "
                    "method='arctic'."
                )
            if limit is not None and self.method not in BATCH_LIMITED_METHODS:
                raise ValueError(
                    f"speculative_config: disable_by_batch_size is honoured for method "
                    f"{' or '.join(map(repr, BATCH_LIMITED_METHODS))}, not {self.method!r}; "
                    "remove it or pick one of those methods."
                )
            if hybrid:
                raise ValueError(
                    "speculative_config: enable_suffix_decoding=true is the hybrid of the "
                    f"Arctic speculator with suffix decoding; set method='arctic' (method="
                    f"{self.method!r} does not use it)."
                )
            return SpeculativeConfigArcticPatch._orig___post_init__(self)
        return _arctic_post_init(self, hybrid)


def _arctic_post_init(cfg: SpeculativeConfig, hybrid: bool):
    if not cfg.model:
        _fail("needs model=PATH, the folder (or hub id) of an Arctic speculator checkpoint.")
    path = os.path.expanduser(cfg.model)
    if _looks_local(cfg.model) and not os.path.isfile(os.path.join(path, "config.json")):
        _fail(f"no speculator checkpoint at {cfg.model!r} (no config.json there); fix the path.")
    if cfg.target_model_config is None:
        _fail("the target model config is missing (build the config through EngineArgs/LLM).")
    user_tokens = cfg.num_speculative_tokens
    if cfg.draft_tensor_parallel_size is None and cfg.target_parallel_config is not None:
        # The speculator shards its heads over the target's TP group.
        cfg.draft_tensor_parallel_size = cfg.target_parallel_config.tensor_parallel_size
    # vLLM's mlp_speculator rules for the draft length (a multiple of n_predict)
    # do not apply: the length is checked below, against the speculator's heads.
    cfg.method, cfg.num_speculative_tokens = "mlp_speculator", None
    try:
        result = SpeculativeConfigArcticPatch._orig___post_init__(cfg)
    finally:
        cfg.method = ARCTIC_METHOD
    if user_tokens is not None:
        cfg.num_speculative_tokens = user_tokens
    elif hybrid:
        # The suffix drafts up to its tree depth; arctic drafts its own length.
        cfg.num_speculative_tokens = cfg.suffix_decoding_max_tree_depth
    hf = cfg.draft_model_config.hf_config
    try:
        spec = parse_speculator_config(hf)
        check_base_model(
            spec, cfg.target_model_config.architectures, skip=envs.skip_spec_model_check()
        )
    except SpeculatorConfigError as err:
        _fail(str(err))
    target_hidden = cfg.target_model_config.get_hidden_size()
    if spec.hidden_dim != target_hidden:
        _fail(
            f"the speculator reads hidden states of size {spec.hidden_dim} but the target's "
            f"hidden size is {target_hidden}; use a speculator trained for this target."
        )
    target_vocab = cfg.target_model_config.get_vocab_size()
    if spec.vocab_size != target_vocab:
        _fail(
            f"the speculator's vocabulary ({spec.vocab_size}) differs from the target's "
            f"({target_vocab}); use a speculator trained for this target."
        )
    limit = spec.max_heads()
    if not hybrid and limit is not None and cfg.num_speculative_tokens > limit:
        _fail(
            f"num_speculative_tokens={cfg.num_speculative_tokens} but the speculator has "
            f"{limit} untied heads; set num_speculative_tokens to at most {limit}."
        )
    if hybrid:
        cfg._validate_suffix_decoding()
    return result


def arctic_draft_tokens(cfg: SpeculativeConfig) -> int:
    """How many tokens the speculator drafts per step (the suffix may draft more in hybrid)."""
    spec = parse_speculator_config(cfg.draft_model_config.hf_config)
    k = cfg.num_speculative_tokens
    if getattr(cfg, "enable_suffix_decoding", False):
        k = min(k, spec.n_predict)
    limit = spec.max_heads()
    return k if limit is None else min(k, limit)


def gated_by_cost(cfg: SpeculativeConfig) -> bool:
    """Whether the speculator drafts only while drafting pays (``disable_by_cost``,
    on unless set false)."""
    return getattr(cfg, "disable_by_cost", None) is not False


def uses_arctic(cfg: SpeculativeConfig | None) -> bool:
    return cfg is not None and cfg.method == ARCTIC_METHOD


def over_batch_cap(cap: int | None, batch_size: int) -> bool:
    """Whether a step of ``batch_size`` requests is at or over ``disable_by_batch_size``
    (such a step makes no drafts); never without a cap."""
    return cap is not None and batch_size >= cap


def capped_suffix(cfg: SpeculativeConfig | None) -> bool:
    """vLLM's suffix decoding with ``disable_by_batch_size``: the cap is the runner
    patch's to apply (vLLM's own runner would draft at every batch size)."""
    return (
        getattr(cfg, "method", None) == SUFFIX_METHOD
        and getattr(cfg, "disable_by_batch_size", None) is not None
    )


def arctic_on(ctx: object) -> bool:
    """Feature predicate of the runner patch: this worker's engine asked for
    ``method="arctic"``, or for suffix decoding with a batch cap."""
    config = getattr(ctx, "vllm_config", None)
    spec = getattr(config, "speculative_config", None)
    return uses_arctic(spec) or capped_suffix(spec)


def is_hybrid(cfg: SpeculativeConfig | None) -> bool:
    return uses_arctic(cfg) and bool(getattr(cfg, "enable_suffix_decoding", False))
