"""Rollout replay on real vLLM objects: SamplingParams, InputProcessor,
EngineCoreRequest, ParentRequest, the engine core's Request and its stop check.

Patch functions are bound to single instances (the classes stay stock for the
rest of the session); ``test_rl_plugin_wiring.py`` applies them to the classes
in a subprocess.
"""

from __future__ import annotations

import types

import pytest

pytestmark = pytest.mark.vllm

KEY = "arctic_max_tokens_per_seq"
ENV = "ARCTIC_PER_SEQ_MAX_TOKENS"


@pytest.fixture
def knob_on(monkeypatch):
    monkeypatch.setenv(ENV, "1")


@pytest.fixture(scope="module")
def input_processor(tiny_llama_dir, cpu_vllm_config):
    """A real InputProcessor for a config-only Llama, on the CPU device."""
    from vllm.config import DeviceConfig, ModelConfig, VllmConfig
    from vllm.v1.engine.input_processor import InputProcessor

    from arctic_inference.vllm.per_seq_max_tokens import InputProcessorPerSeqPatch

    model_config = ModelConfig(
        model=str(tiny_llama_dir), skip_tokenizer_init=True, max_model_len=256
    )
    vllm_config = VllmConfig(model_config=model_config, device_config=DeviceConfig(device="cpu"))
    processor = InputProcessor(vllm_config)
    processor.process_inputs = types.MethodType(InputProcessorPerSeqPatch.process_inputs, processor)
    return processor


def _parent(processor, params):
    """Run a request through the (patched) input processor into a ParentRequest."""
    from vllm.v1.engine.parallel_sampling import ParentRequest

    from arctic_inference.vllm.per_seq_max_tokens import ParentRequestPerSeqPatch

    request = processor.process_inputs(
        "req",
        {"type": "token", "prompt_token_ids": [5, 6, 7]},
        params,
        supported_tasks=("generate",),
    )
    processor.assign_request_id(request)
    parent = ParentRequest(request)
    parent._get_child_sampling_params = types.MethodType(
        ParentRequestPerSeqPatch._get_child_sampling_params, parent
    )
    return request, parent


def _children(parent):
    return [parent.get_child_info(i)[1] for i in range(parent.n)]


def test_each_child_gets_its_own_length(knob_on, input_processor):
    from vllm import SamplingParams

    lengths = [3, 11, 7, 20]
    params = SamplingParams(n=4, ignore_eos=True, extra_args={KEY: lengths, "other": 1})
    request, parent = _parent(input_processor, params)

    assert request.sampling_params.max_tokens == 20  # the request: longest sample
    children = _children(parent)
    assert [c.max_tokens for c in children] == lengths
    assert all(c.n == 1 for c in children)
    # The list leaves the children (it would not validate with n=1) but other
    # extra_args stay; the parent keeps its list.
    assert all(c.extra_args == {"other": 1} for c in children)
    assert parent.sampling_params.extra_args[KEY] == lengths
    assert sorted(parent.child_requests) == sorted(f"{i}_{request.request_id}" for i in range(4))


def test_seeded_children_keep_distinct_seeds(knob_on, input_processor):
    from vllm import SamplingParams

    params = SamplingParams(n=3, seed=100, extra_args={KEY: [4, 4, 9]})
    _, parent = _parent(input_processor, params)
    children = _children(parent)
    assert [c.seed for c in children] == [100, 101, 102]
    assert [c.max_tokens for c in children] == [4, 4, 9]
    assert len({id(c) for c in children}) == 3


def test_unseeded_children_share_params_per_length(knob_on, input_processor):
    from vllm import SamplingParams

    params = SamplingParams(n=4, extra_args={KEY: [5, 8, 5, 8]})
    _, parent = _parent(input_processor, params)
    c0, c1, c2, c3 = _children(parent)
    assert c0 is c2 and c1 is c3 and c0 is not c1
    assert (c0.max_tokens, c1.max_tokens) == (5, 8)
    assert c0.seed is None
    # Asking again (vLLM asks once per child, but must be stable) is consistent.
    assert parent._get_child_sampling_params(1) is c1


def test_without_the_key_vllm_behaviour_is_unchanged(knob_on, input_processor):
    from vllm import SamplingParams

    _, parent = _parent(input_processor, SamplingParams(n=3, max_tokens=12))
    children = _children(parent)
    assert [c.max_tokens for c in children] == [12, 12, 12]
    assert children[0] is children[1] is children[2]  # vLLM's shared object
    assert parent.cached_child_sampling_params is children[0]

    _, parent = _parent(input_processor, SamplingParams(n=2, seed=7, max_tokens=12))
    assert [c.seed for c in _children(parent)] == [7, 8]


def test_knob_off_ignores_the_key(monkeypatch, input_processor):
    from vllm import SamplingParams

    monkeypatch.setenv(ENV, "0")
    params = SamplingParams(n=3, max_tokens=6, extra_args={KEY: [1, 2, 3]})
    request, parent = _parent(input_processor, params)
    assert request.sampling_params.max_tokens == 6
    assert [c.max_tokens for c in _children(parent)] == [6, 6, 6]
    # Removed from the engine's clone only; the caller's params keep it.
    assert request.sampling_params.extra_args is None
    assert params.extra_args == {KEY: [1, 2, 3]}


def test_single_sample_list_sets_max_tokens(knob_on, input_processor):
    from vllm import SamplingParams

    params = SamplingParams(n=1, max_tokens=50, extra_args={KEY: [9]})
    request, _ = _parent(input_processor, params)
    assert request.sampling_params.max_tokens == 9


def test_engine_core_stops_each_child_at_its_length(knob_on, input_processor):
    """Children become engine-core Requests; vLLM's own stop check ends each
    one exactly at its length (ignore_eos, tokens appended one by one)."""
    from copy import copy

    from vllm import SamplingParams
    from vllm.v1.core.sched.utils import check_stop
    from vllm.v1.request import Request

    lengths = [2, 9, 5, 14]
    params = SamplingParams(n=4, ignore_eos=True, extra_args={KEY: lengths})
    request, parent = _parent(input_processor, params)
    produced = []
    for idx in range(4):
        child_id, child_params = parent.get_child_info(idx)
        child = copy(request)
        child.request_id = child_id
        child.sampling_params = child_params
        core_request = Request.from_engine_core_request(child, block_hasher=None)
        steps = 0
        while True:
            core_request.append_output_token_ids(17)
            steps += 1
            if check_stop(core_request, max_model_len=256):
                break
            assert steps < 100
        produced.append(steps)
    assert produced == lengths


@pytest.mark.parametrize(
    ("n", "value", "message"),
    [
        (4, [1, 2, 3], "has 3 entries but n=4"),
        (2, [1, 0], r"invalid: \[1\]=0"),
        (2, [1, -3], r"invalid: \[1\]=-3"),
        (2, [1, 2.5], r"invalid: \[1\]=2.5"),
        (2, [True, 3], r"invalid: \[0\]=True"),
        (2, "12", "must be a list of n=2 positive ints"),
        (2, 5, "must be a list of n=2 positive ints"),
        (
            2,
            [4, 10**30],
            r"at most 2147483647 \(the per-sample cap\); too long: \[1\]=1000000000000000000000000000000",
        ),
        (1, [2**31], r"at most 2147483647 .*too long: \[0\]=2147483648"),
    ],
)
def test_bad_lists_are_rejected_with_the_fix(knob_on, n, value, message):
    from vllm import SamplingParams

    from arctic_inference.vllm.per_seq_max_tokens import SamplingParamsPerSeqPatch

    params = SamplingParams(n=n, extra_args={KEY: value})  # stock class: accepted
    with pytest.raises(ValueError, match=message):
        SamplingParamsPerSeqPatch._verify_args(params)


def test_min_tokens_above_a_length_is_rejected(knob_on):
    from vllm import SamplingParams

    from arctic_inference.vllm.per_seq_max_tokens import SamplingParamsPerSeqPatch

    params = SamplingParams(n=2, min_tokens=5, max_tokens=20, extra_args={KEY: [4, 10]})
    with pytest.raises(ValueError, match="below min_tokens=5"):
        SamplingParamsPerSeqPatch._verify_args(params)


def test_bad_list_fails_when_the_request_is_added(knob_on, input_processor):
    """Params built before the plugin loaded were never checked: adding the
    request (process_inputs) must still refuse them, before any child exists."""
    from vllm import SamplingParams

    params = SamplingParams(n=3, extra_args={KEY: [1, 2]})
    with pytest.raises(ValueError, match="has 2 entries but n=3"):
        input_processor.process_inputs(
            "bad",
            {"type": "token", "prompt_token_ids": [1]},
            params,
            supported_tasks=("generate",),
        )


def test_length_beyond_max_model_len_fails_when_the_request_is_added(knob_on, input_processor):
    """With the engine's config at hand the bound is its max_model_len (256 here):
    no sample can generate more, so a longer replay length is refused by name."""
    from vllm import SamplingParams

    assert input_processor.model_config.max_model_len == 256
    params = SamplingParams(n=2, extra_args={KEY: [256, 257]})
    with pytest.raises(
        ValueError, match=r"at most 256 \(the model's max_model_len\); too long: \[1\]=257"
    ):
        input_processor.process_inputs(
            "long",
            {"type": "token", "prompt_token_ids": [1]},
            params,
            supported_tasks=("generate",),
        )
    ok = SamplingParams(n=2, extra_args={KEY: [256, 3]})
    request = input_processor.process_inputs(
        "fits", {"type": "token", "prompt_token_ids": [1]}, ok, supported_tasks=("generate",)
    )
    assert request.sampling_params.max_tokens == 256
