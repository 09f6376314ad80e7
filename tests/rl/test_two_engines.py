"""Two engines with different Arctic knobs in one process (CPU, real vLLM objects).

Patches are process-wide; each engine's config must still decide for itself.
This is the ``LLM(a); LLM(b)`` situation of an RL driver that keeps a policy
and a reference engine in one process, minus the GPU: configs, apply_side,
and the patched methods run for real, on objects built under each config.
"""

from __future__ import annotations

import types

import pytest
import torch

pytestmark = pytest.mark.vllm

KEY = "arctic_max_tokens_per_seq"
KNOB_ENVS = ("ARCTIC_FP32_LM_HEAD", "ARCTIC_SLEEP_KEEP_DRAFTER", "ARCTIC_PER_SEQ_MAX_TOKENS")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in KNOB_ENVS:
        monkeypatch.delenv(name, raising=False)


def _config(model=None, **arctic):
    from vllm.config import DeviceConfig, VllmConfig

    kwargs = {} if model is None else {"model_config": model}
    return VllmConfig(
        device_config=DeviceConfig(device="cpu"), additional_config={"arctic": arctic}, **kwargs
    )


def test_worker_features_are_decided_per_engine(reverted_patches, cpu_vllm_config):
    from arctic_inference.patching import is_applied
    from arctic_inference.vllm.fp32_lm_head import FP32LMHeadPatch
    from arctic_inference.vllm.patch_set import applied_features, apply_side

    off = _config(fp32_lm_head=False, sleep_keep_drafter=False)
    on = _config(fp32_lm_head=True, sleep_keep_drafter=False)

    first = apply_side("worker", off)
    assert "fp32-lm-head" not in first and not is_applied(FP32LMHeadPatch)
    second = apply_side("worker", on)  # a later engine turns the feature on
    assert "fp32-lm-head" in second and is_applied(FP32LMHeadPatch)
    third = apply_side("worker", off)  # another engine with it off: reported off...
    assert "fp32-lm-head" not in third
    assert "fp32-lm-head" in applied_features("worker")  # ...while the patch stays in
    assert "sleep-keep-drafter" not in applied_features("worker")


def test_fp32_head_follows_the_config_each_model_was_built_under(reverted_patches, in_vllm_config):
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.layers.logits_processor import LogitsProcessor
    from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead

    from arctic_inference.vllm.fp32_lm_head import FP32LMHeadPatch

    torch.manual_seed(0)
    head = ParallelLMHead(300, 256, params_dtype=torch.bfloat16)
    with torch.no_grad():
        head.weight.normal_(0.0, 0.05)
    stock = LogitsProcessor(300)  # built before the patch: vLLM's projection
    FP32LMHeadPatch.apply()
    processors = {}
    for knob in (True, False):
        with set_current_vllm_config(_config(fp32_lm_head=knob)):
            processors[knob] = LogitsProcessor(300)
    hidden = torch.randn(4, 256).to(torch.bfloat16)

    assert processors[True](head, hidden).dtype == torch.float32
    out_off = processors[False](head, hidden)
    assert out_off.dtype == torch.bfloat16
    assert torch.equal(out_off, stock(head, hidden))


def test_keep_drafter_follows_each_workers_config(monkeypatch):
    from vllm.v1.worker.gpu_worker import Worker

    from arctic_inference.vllm.sleep_drafter import keeps_drafter

    monkeypatch.setenv("ARCTIC_SLEEP_KEEP_DRAFTER", "1")  # the last engine built exported 1
    workers = {}
    for knob in (True, False):
        worker = object.__new__(Worker)  # a real Worker needs a GPU to build
        worker.vllm_config = _config(sleep_keep_drafter=knob)
        workers[knob] = worker
    assert keeps_drafter(workers[True]) is True
    assert keeps_drafter(workers[False]) is False  # its own config, not the env


@pytest.fixture(scope="module")
def processors(tiny_llama_dir, cpu_vllm_config):
    """Input processors of two engines: per-seq max tokens on and off."""
    from vllm.config import ModelConfig
    from vllm.v1.engine.input_processor import InputProcessor

    from arctic_inference.vllm.per_seq_max_tokens import InputProcessorPerSeqPatch

    built = {}
    for knob in (True, False):
        model = ModelConfig(model=str(tiny_llama_dir), skip_tokenizer_init=True, max_model_len=256)
        processor = InputProcessor(_config(model, per_seq_max_tokens=knob))
        processor.process_inputs = types.MethodType(
            InputProcessorPerSeqPatch.process_inputs, processor
        )
        built[knob] = processor
    return built


@pytest.mark.parametrize("exported", ["0", "1"])
def test_per_seq_lengths_follow_the_engine_not_the_env(processors, monkeypatch, exported):
    """Whatever the last-built engine exported, each engine keeps its own setting."""
    from vllm import SamplingParams
    from vllm.v1.engine.parallel_sampling import ParentRequest

    from arctic_inference.vllm.per_seq_max_tokens import ParentRequestPerSeqPatch

    monkeypatch.setenv("ARCTIC_PER_SEQ_MAX_TOKENS", exported)
    lengths = {}
    for knob, processor in processors.items():
        params = SamplingParams(n=3, max_tokens=9, ignore_eos=True, extra_args={KEY: [2, 4, 6]})
        request = processor.process_inputs(
            f"r{knob}",
            {"type": "token", "prompt_token_ids": [1, 2]},
            params,
            supported_tasks=("generate",),
        )
        processor.assign_request_id(request)
        parent = ParentRequest(request)
        parent._get_child_sampling_params = types.MethodType(
            ParentRequestPerSeqPatch._get_child_sampling_params, parent
        )
        lengths[knob] = [parent.get_child_info(i)[1].max_tokens for i in range(3)]
    assert lengths == {True: [2, 4, 6], False: [9, 9, 9]}
