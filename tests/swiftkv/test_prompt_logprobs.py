"""Prompt logprobs are refused for SwiftKV models, on vLLM's real request path.

A real ``InputProcessor`` for a SwiftKV checkpoint, with the patched
``_validate_params`` bound to this instance only (the class stays stock for
the rest of the session), takes real ``SamplingParams`` through
``process_inputs``.
"""

from __future__ import annotations

import types

import pytest

from tests.swiftkv.conftest import make_ckpt


def _processor(ckpt):
    from vllm.config import DeviceConfig, ModelConfig, VllmConfig
    from vllm.v1.engine.input_processor import InputProcessor

    from arctic_inference.vllm.swiftkv.request_check import InputProcessorSwiftKVPatch

    model_config = ModelConfig(model=str(ckpt), skip_tokenizer_init=True, max_model_len=256)
    cfg = VllmConfig(model_config=model_config, device_config=DeviceConfig(device="cpu"))
    processor = InputProcessor(cfg)
    processor._validate_params = types.MethodType(
        InputProcessorSwiftKVPatch._validate_params, processor
    )
    return processor


def _add(processor, params):
    return processor.process_inputs(
        "req",
        {"type": "token", "prompt_token_ids": [5, 6, 7]},
        params,
        supported_tasks=("generate",),
    )


@pytest.fixture(scope="module")
def swiftkv_processor(tmp_path_factory, one_rank_group):
    from arctic_inference.vllm.swiftkv.registration import register_swiftkv

    register_swiftkv()
    return _processor(make_ckpt(tmp_path_factory.mktemp("plp"), "half", kv_layers=2))


@pytest.mark.parametrize("prompt_logprobs", [0, 1, 20])
def test_prompt_logprobs_are_refused_with_the_fix(swiftkv_processor, prompt_logprobs):
    from vllm import SamplingParams

    from arctic_inference.vllm.swiftkv.request_check import PromptLogprobsUnsupported

    params = SamplingParams(max_tokens=4, prompt_logprobs=prompt_logprobs)
    with pytest.raises(PromptLogprobsUnsupported, match="leave prompt_logprobs unset") as info:
        _add(swiftkv_processor, params)
    assert f"prompt_logprobs={prompt_logprobs} is not supported by the SwiftKV model" in str(
        info.value
    )
    # vLLM's front ends turn a ValueError into a 400 answer, not a crash.
    assert isinstance(info.value, ValueError)


def test_sample_logprobs_still_pass(swiftkv_processor):
    from vllm import SamplingParams

    request = _add(swiftkv_processor, SamplingParams(max_tokens=4, logprobs=5))
    assert request.sampling_params.logprobs == 5
    assert request.sampling_params.prompt_logprobs is None


def test_vllm_own_validation_still_runs_first(swiftkv_processor):
    """The wrapped method is vLLM's, not a replacement: its own errors come first."""
    from vllm import SamplingParams

    too_many = SamplingParams(max_tokens=4, prompt_logprobs=10**6)
    with pytest.raises(ValueError, match="greater than max allowed"):
        _add(swiftkv_processor, too_many)


def test_switched_off_checkpoint_serves_prompt_logprobs(tmp_path, one_rank_group):
    from vllm import SamplingParams

    from arctic_inference.vllm.swiftkv.registration import register_swiftkv

    register_swiftkv()
    processor = _processor(make_ckpt(tmp_path, "off", kv_layers=4))
    request = _add(processor, SamplingParams(max_tokens=4, prompt_logprobs=1))
    assert request.sampling_params.prompt_logprobs == 1
