"""Knobs of the RL and memory features, defined without importing vLLM.

``patch_set`` imports this module at plugin load to register the flags, so it
must stay light; the feature modules import it for their runtime gates.

Engine-side patches (per-sequence max tokens) are installed whenever the
plugin is on, because ``vllm serve`` parses its flags only after plugins load;
they consult :func:`per_seq_max_tokens_enabled` at run time. Worker-side
features (fp32 LM head, keep drafter) are applied when some engine's config
turns them on, and then consult the same config-level helpers at run time
for the engine they run in (several engines may share a process; see
``patch_set``).
"""

from __future__ import annotations

from typing import Any

from arctic_inference.vllm.args import ArcticArg

__all__ = [
    "FP32_LM_HEAD",
    "PER_SEQ_MAX_TOKENS",
    "SLEEP_KEEP_DRAFTER",
    "fp32_lm_head_enabled",
    "fp32_lm_head_on",
    "per_seq_max_tokens_enabled",
    "sleep_keep_drafter_enabled",
    "sleep_keep_drafter_on",
]

FP32_LM_HEAD = ArcticArg(
    name="fp32_lm_head",
    type=bool,
    default=False,
    env="ARCTIC_FP32_LM_HEAD",
    help="Compute the LM-head projection (logits and greedy argmax) in fp32 by "
    "upcasting bf16/fp16 operands on the fly, without keeping an fp32 copy of "
    "the weight; logprobs then match an fp32 trainer. Quantized LM heads are "
    "left to vLLM.",
)

PER_SEQ_MAX_TOKENS = ArcticArg(
    name="per_seq_max_tokens",
    type=bool,
    default=False,
    env="ARCTIC_PER_SEQ_MAX_TOKENS",
    help="Honour SamplingParams.extra_args['arctic_max_tokens_per_seq'] = "
    "[len_0, ..., len_{n-1}]: with n>1, sample i stops after len_i tokens "
    "(rollout replay). The list must have n positive ints.",
)

SLEEP_KEEP_DRAFTER = ArcticArg(
    name="sleep_keep_drafter",
    type=bool,
    default=False,
    env="ARCTIC_SLEEP_KEEP_DRAFTER",
    help="With --enable-sleep-mode and a speculative drafter model, save the "
    "drafter's weights to host memory on sleep(level=2) and restore them on "
    "wake_up(), which vLLM otherwise leaves uninitialised.",
)


def per_seq_max_tokens_enabled(vllm_config: Any | None = None) -> bool:
    """Whether per-sample lengths are honoured.

    With a config: its resolved Arctic value. Without one (``SamplingParams``
    and ``ParentRequest`` have no config at hand): the env variable, which the
    process that built the config exported and engine processes inherit.
    """
    return bool(PER_SEQ_MAX_TOKENS.value_for(vllm_config))


def fp32_lm_head_enabled(vllm_config: Any | None) -> bool:
    """Whether this config asks for the fp32 LM head."""
    return bool(FP32_LM_HEAD.value_for(vllm_config))


def sleep_keep_drafter_enabled(vllm_config: Any | None) -> bool:
    """Whether this config asks to keep the drafter across level-2 sleep."""
    return bool(SLEEP_KEEP_DRAFTER.value_for(vllm_config))


def fp32_lm_head_on(ctx: Any) -> bool:
    """Worker-side predicate of the fp32 LM head feature (``PatchContext``)."""
    return fp32_lm_head_enabled(ctx.vllm_config)


def sleep_keep_drafter_on(ctx: Any) -> bool:
    """Worker-side predicate of the keep-drafter-on-sleep feature (``PatchContext``)."""
    return sleep_keep_drafter_enabled(ctx.vllm_config)
