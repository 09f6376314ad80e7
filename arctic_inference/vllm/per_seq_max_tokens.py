"""Rollout replay: a different ``max_tokens`` for each of the n samples.

Why: GRPO-style RL replays rollouts — n samples of one prompt whose lengths
were decided elsewhere (by a previous rollout, a length curriculum, a budget
per sample). vLLM's parallel sampling gives all n children one ``max_tokens``.
With this feature the request carries one length per sample::

    SamplingParams(n=4, extra_args={"arctic_max_tokens_per_seq": [8, 16, 24, 32]})

and child ``i`` stops after ``lengths[i]`` tokens. ``extra_args`` is a real,
serialised ``SamplingParams`` field, so the list travels through the
OpenAI server (``vllm_xargs``) and to a separate engine-core process.

Semantics: when the key is present it takes precedence over ``max_tokens``;
the request as a whole gets ``max_tokens = max(lengths)`` (so ``n=1`` with a
one-element list also works) and each child its own entry. Everything else
about the children is what vLLM does: a seeded request gives child ``i`` the
seed ``seed + i``; an unseeded one shares params between children that have
the same length (vLLM shares one object among all of them).

Where (vLLM 0.26.0):

* ``SamplingParams._verify_args`` — validates the list when the params are
  built, so a bad list fails at ``SamplingParams(...)`` already.
* ``InputProcessor.process_inputs`` — validates again on the engine's own
  clone (params built before the plugin loaded were never checked), now with
  every entry bounded by the engine's ``max_model_len``, and sets
  ``max_tokens = max(lengths)``; this runs when the request is added, before
  anything reaches the engine core.
* ``ParentRequest._get_child_sampling_params`` — builds each child with its
  own ``max_tokens``. The key is removed from the child's ``extra_args``: a
  child has ``n=1``, and the list (of length n) would not validate there when
  the engine core decodes the child's params.

Enabled by ``--per-seq-max-tokens`` / ``ARCTIC_PER_SEQ_MAX_TOKENS=1``. The
patches are installed whenever the plugin is on (``vllm serve`` parses its
flags after plugins load). The per-engine decision is made in
``InputProcessor.process_inputs``, from that engine's own config (several
engines may share a process): with the knob off the key is removed from the
engine's clone of the params (the caller's object is untouched) and the
request runs as in stock vLLM, with a one-time warning; with it on, the key
stays, and ``ParentRequest`` acts on what the input processor left.
``SamplingParams`` has no config at hand, so its early check follows the env
variable the config-building process exported.
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import copy
from typing import Any

from vllm.logger import init_logger
from vllm.sampling_params import SamplingParams
from vllm.v1.engine import EngineCoreRequest
from vllm.v1.engine.input_processor import InputProcessor
from vllm.v1.engine.parallel_sampling import ParentRequest

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.rl_args import PER_SEQ_MAX_TOKENS, per_seq_max_tokens_enabled

__all__ = [
    "MAX_TOKENS_PER_SEQ_KEY",
    "MAX_TOKENS_PER_SEQ_LIMIT",
    "InputProcessorPerSeqPatch",
    "ParentRequestPerSeqPatch",
    "SamplingParamsPerSeqPatch",
    "child_params_for",
    "per_seq_max_tokens",
    "validate_per_seq_max_tokens",
]

MAX_TOKENS_PER_SEQ_KEY = "arctic_max_tokens_per_seq"
# Upper bound of one entry where no model config is at hand (SamplingParams):
# the largest int32, far above any context length; the engine then checks
# against its own max_model_len.
MAX_TOKENS_PER_SEQ_LIMIT = 2**31 - 1

# vLLM's logger class, for warning_once.
logger = init_logger(f"vllm.{__name__}")


def validate_per_seq_max_tokens(
    lengths: Any,
    *,
    n: int,
    min_tokens: int = 0,
    limit: int = MAX_TOKENS_PER_SEQ_LIMIT,
    limit_name: str = "the per-sample cap",
) -> list[int]:
    """Check a per-sample length list against ``n``; return it as ``list[int]``.

    Every entry must be in ``[max(min_tokens, 1), limit]``: the engine passes
    ``limit = max_model_len`` (no sample can outgrow the model's context);
    without a config the documented cap ``MAX_TOKENS_PER_SEQ_LIMIT`` applies.
    Raises ``ValueError`` naming the problem and how to fix it.
    """
    key = f"extra_args[{MAX_TOKENS_PER_SEQ_KEY!r}]"
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Sequence):
        raise ValueError(
            f"{key} must be a list of n={n} positive ints (one max_tokens per "
            f"sample), got {type(lengths).__name__} {lengths!r}."
        )
    if len(lengths) != n:
        raise ValueError(
            f"{key} has {len(lengths)} entries but n={n}; give exactly one "
            f"length per sample (or set n={len(lengths)})."
        )
    bad = [
        (i, v)
        for i, v in enumerate(lengths)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1
    ]
    if bad:
        shown = ", ".join(f"[{i}]={v!r}" for i, v in bad[:5])
        raise ValueError(
            f"{key} entries must be positive ints (max_tokens of each sample); invalid: {shown}."
        )
    if min_tokens > min(lengths):
        raise ValueError(
            f"{key} has a length {min(lengths)} below min_tokens={min_tokens}; "
            "lower min_tokens or raise that sample's length."
        )
    too_long = [(i, v) for i, v in enumerate(lengths) if v > limit]
    if too_long:
        shown = ", ".join(f"[{i}]={v!r}" for i, v in too_long[:5])
        raise ValueError(
            f"{key} entries must be at most {limit} ({limit_name}); too long: "
            f"{shown}. Lower those samples' lengths."
        )
    return [int(v) for v in lengths]


def per_seq_max_tokens(
    params: SamplingParams, max_model_len: int | None = None
) -> list[int] | None:
    """The validated per-sample lengths of ``params``, or None if not requested.

    ``max_model_len`` (the engine's) bounds each entry; without it the
    documented cap ``MAX_TOKENS_PER_SEQ_LIMIT`` does.
    """
    extra = params.extra_args
    if not extra or MAX_TOKENS_PER_SEQ_KEY not in extra:
        return None
    bound = {}
    if max_model_len is not None:
        bound = {"limit": max_model_len, "limit_name": "the model's max_model_len"}
    return validate_per_seq_max_tokens(
        extra[MAX_TOKENS_PER_SEQ_KEY], n=params.n, min_tokens=params.min_tokens, **bound
    )


def child_params_for(parent: SamplingParams, lengths: list[int], index: int) -> SamplingParams:
    """Sampling params of child ``index``: n=1, its own max_tokens, no list.

    A shallow copy, as vLLM makes for its children; ``extra_args`` is a new
    dict so the parent's (and siblings') stay untouched.
    """
    child = copy(parent)
    child.n = 1
    child.max_tokens = lengths[index]
    child.extra_args = {
        k: v for k, v in parent.extra_args.items() if k != MAX_TOKENS_PER_SEQ_KEY
    } or None
    if parent.seed is not None:
        child.seed = parent.seed + index
    return child


class SamplingParamsPerSeqPatch(ArcticPatch[SamplingParams]):
    """Reject a malformed per-sample length list when the params are built."""

    _orig__verify_args = SamplingParams._verify_args

    def _verify_args(self: SamplingParams) -> None:
        SamplingParamsPerSeqPatch._orig__verify_args(self)
        if per_seq_max_tokens_enabled():
            per_seq_max_tokens(self)


class InputProcessorPerSeqPatch(ArcticPatch[InputProcessor]):
    """Validate on the engine's clone and size the request to the longest sample."""

    _orig_process_inputs = InputProcessor.process_inputs

    def process_inputs(self: InputProcessor, *args: Any, **kwargs: Any) -> EngineCoreRequest:
        request = InputProcessorPerSeqPatch._orig_process_inputs(self, *args, **kwargs)
        params = request.sampling_params
        if params is None or MAX_TOKENS_PER_SEQ_KEY not in (params.extra_args or {}):
            return request
        if not per_seq_max_tokens_enabled(self.vllm_config):
            logger.warning_once(
                "A request carries extra_args[%r] but %s is off, so every sample "
                "uses max_tokens. Start vLLM with %s (or %s=1) to honour it.",
                MAX_TOKENS_PER_SEQ_KEY,
                PER_SEQ_MAX_TOKENS.name,
                PER_SEQ_MAX_TOKENS.flag,
                PER_SEQ_MAX_TOKENS.env,
            )
            # The engine's own clone: later stages (ParentRequest, the engine
            # core's validation of children) then see a stock request.
            params.extra_args = {
                k: v for k, v in params.extra_args.items() if k != MAX_TOKENS_PER_SEQ_KEY
            } or None
            return request
        lengths = per_seq_max_tokens(params, self.model_config.max_model_len)
        assert lengths is not None
        params.max_tokens = max(lengths)
        return request


class ParentRequestPerSeqPatch(ArcticPatch[ParentRequest]):
    """Give each child of a parallel-sampling request its own max_tokens."""

    _orig__get_child_sampling_params = ParentRequest._get_child_sampling_params

    def _get_child_sampling_params(self: ParentRequest, index: int) -> SamplingParams:
        # No config here: the input processor of this engine already removed
        # the key when the engine has the knob off.
        lengths = per_seq_max_tokens(self.sampling_params)
        if lengths is None:
            return ParentRequestPerSeqPatch._orig__get_child_sampling_params(self, index)
        if self.sampling_params.seed is not None:
            return child_params_for(self.sampling_params, lengths, index)
        # Unseeded children differ only in length: share one params object per
        # distinct length, as vLLM shares one among all children.
        cache: dict[int, SamplingParams] = self.__dict__.setdefault(
            "_arctic_child_params_by_length", {}
        )
        child = cache.get(lengths[index])
        if child is None:
            child = cache[lengths[index]] = child_params_for(self.sampling_params, lengths, index)
        return child
