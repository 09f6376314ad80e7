"""Refuse requests a SwiftKV model would answer wrongly: prompt logprobs.

In a batch with prompt tokens only the last scheduled token of each request
runs the SwiftKV layers; every other prompt position keeps the bottom-layer
hidden state, so logprobs of prompt tokens would be computed from the wrong
state. vLLM would return them without complaint, hence the check when the
request is added (``InputProcessor._validate_params``, vLLM 0.26.0), before
anything reaches the engine core. With speculative decoding the model runs
every token through every layer, and a checkpoint with SwiftKV switched off
is a plain Llama: both serve prompt logprobs correctly and are let through.
"""

from __future__ import annotations

from typing import Any

from vllm.sampling_params import SamplingParams
from vllm.v1.engine.input_processor import InputProcessor

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.swiftkv.config import MODEL_TYPE, num_swiftkv_layers


class PromptLogprobsUnsupported(ValueError):
    """A request asks for prompt logprobs from a model that skips prompt tokens' top layers."""


def skips_prompt_tokens(model_config: Any, speculative_config: Any) -> bool:
    """Whether this engine's model runs prompt tokens through the bottom layers only."""
    hf = getattr(model_config, "hf_config", None)
    if getattr(hf, "model_type", None) != MODEL_TYPE:
        return False
    return num_swiftkv_layers(hf) > 0 and speculative_config is None


def check_prompt_logprobs(params: Any, model_config: Any, speculative_config: Any) -> None:
    """Raise :class:`PromptLogprobsUnsupported` for prompt logprobs on a SwiftKV model."""
    if not isinstance(params, SamplingParams) or params.prompt_logprobs is None:
        return
    if not skips_prompt_tokens(model_config, speculative_config):
        return
    raise PromptLogprobsUnsupported(
        f"prompt_logprobs={params.prompt_logprobs} is not supported by the SwiftKV model "
        f"{model_config.model!r}: prompt tokens skip its top layers, so their logprobs "
        "would be wrong; leave prompt_logprobs unset (logprobs of generated tokens work)."
    )


class InputProcessorSwiftKVPatch(ArcticPatch[InputProcessor]):
    """Check prompt logprobs after vLLM's own parameter validation."""

    _orig__validate_params = InputProcessor._validate_params

    def _validate_params(self: InputProcessor, params: Any, supported_tasks: Any) -> None:
        InputProcessorSwiftKVPatch._orig__validate_params(self, params, supported_tasks)
        check_prompt_logprobs(params, self.model_config, self.speculative_config)
