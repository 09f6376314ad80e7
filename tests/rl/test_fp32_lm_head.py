"""FP32 LM head on real vLLM layers (LogitsProcessor + ParallelLMHead) on the CPU.

The patch function is bound to one LogitsProcessor *instance* so vLLM's real
``forward``/``_get_logits``/``get_top_tokens`` run through it without patching
the class for the rest of the session; class-level application is covered by
``test_rl_plugin_wiring.py`` in a subprocess.
"""

from __future__ import annotations

import types

import pytest
import torch

pytestmark = pytest.mark.vllm

VOCAB = 300  # padded to 320 by ParallelLMHead: the padding path is exercised
HIDDEN = 512


def _head_and_processor(dtype: torch.dtype, seed: int = 0):
    from vllm.model_executor.layers.logits_processor import LogitsProcessor
    from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead

    torch.manual_seed(seed)
    head = ParallelLMHead(VOCAB, HIDDEN, params_dtype=dtype)
    with torch.no_grad():
        head.weight.normal_(0.0, 0.05)
    return head, LogitsProcessor(VOCAB)


def _patched(processor, knob: bool = True):
    """Bind the patch to one instance; ``knob`` is what the patched __init__
    would record from the config the model is built under."""
    from arctic_inference.vllm.fp32_lm_head import FP32_FLAG_ATTR, FP32LMHeadPatch

    processor._apply_head = types.MethodType(FP32LMHeadPatch._apply_head, processor)
    setattr(processor, FP32_FLAG_ATTR, knob)
    return processor


def _reference(head, hidden: torch.Tensor) -> torch.Tensor:
    """fp64 projection from the very same weights (padding rows dropped)."""
    return hidden.double() @ head.weight[:VOCAB].double().T


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_logits_error_vs_fp64_is_10x_smaller(in_vllm_config, dtype):
    head, vanilla = _head_and_processor(dtype)
    _, fp32 = _head_and_processor(dtype)
    fp32 = _patched(fp32)
    hidden = (torch.randn(16, HIDDEN) * 2).to(dtype)

    ref = _reference(head, hidden)
    out_vanilla = vanilla(head, hidden)
    out_fp32 = fp32(head, hidden)

    assert out_vanilla.dtype == dtype  # stock vLLM keeps the model dtype
    assert out_fp32.dtype == torch.float32
    assert out_fp32.shape == out_vanilla.shape == (16, VOCAB)
    err_vanilla = (out_vanilla.double() - ref).abs().max().item()
    err_fp32 = (out_fp32.double() - ref).abs().max().item()
    print(f"{dtype}: max |logit err| vanilla={err_vanilla:.3e} fp32={err_fp32:.3e}")
    assert err_fp32 * 10 < err_vanilla
    assert err_fp32 < 1e-4

    # The logprobs a trainer compares: log_softmax of the logits.
    lp_ref = torch.log_softmax(ref, dim=-1)
    lp_err_vanilla = (torch.log_softmax(out_vanilla.float(), -1).double() - lp_ref).abs().max()
    lp_err_fp32 = (torch.log_softmax(out_fp32, -1).double() - lp_ref).abs().max()
    assert lp_err_fp32 * 10 < lp_err_vanilla


def test_greedy_fast_path_uses_fp32(in_vllm_config):
    """get_top_tokens (local argmax) must pick the fp64 argmax, not a bf16 tie."""
    head, processor = _head_and_processor(torch.bfloat16, seed=1)
    processor = _patched(processor)
    hidden = torch.randn(256, HIDDEN).to(torch.bfloat16)
    ref = _reference(head, hidden)

    top = processor.get_top_tokens(head, hidden)
    assert top.dtype == torch.int64
    assert torch.equal(top, ref.argmax(dim=-1))

    # Same weights through stock vLLM: bf16 rounding creates ties/flips, which
    # is what the fp32 path removes (report how many, do not rely on it).
    _, vanilla = _head_and_processor(torch.bfloat16, seed=1)
    flips = (vanilla.get_top_tokens(head, hidden) != ref.argmax(dim=-1)).sum().item()
    print(f"greedy argmax disagreements with fp64: vanilla={flips}/256, fp32=0/256")


def test_no_fp32_weight_is_kept(in_vllm_config):
    head, processor = _head_and_processor(torch.bfloat16)
    processor = _patched(processor)
    before = {n: (t.dtype, t.data_ptr()) for n, t in head.state_dict().items()}
    processor(head, torch.randn(4, HIDDEN).to(torch.bfloat16))
    after = {n: (t.dtype, t.data_ptr()) for n, t in head.state_dict().items()}
    assert before == after
    assert head.weight.dtype == torch.bfloat16
    assert not any(isinstance(v, torch.Tensor) for v in vars(head).values())


def test_chunked_upcast_matches_single_shot():
    from arctic_inference.vllm.fp32_lm_head import fp32_head_projection

    torch.manual_seed(2)
    weight = torch.randn(1000, 96).to(torch.bfloat16)
    bias = torch.randn(1000).to(torch.bfloat16)
    hidden = torch.randn(3, 5, 96).to(torch.bfloat16)
    whole = fp32_head_projection(hidden, weight, bias)
    # 96 * 4 bytes a row -> 7 rows a chunk -> 143 chunks, last one partial.
    chunked = fp32_head_projection(hidden, weight, bias, chunk_bytes=7 * 96 * 4)
    ref = hidden.double() @ weight.double().T + bias.double()
    assert chunked.shape == whole.shape == (3, 5, 1000)
    assert chunked.dtype == torch.float32
    torch.testing.assert_close(chunked, whole, rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(chunked.double(), ref, rtol=1e-6, atol=1e-5)


def test_projection_rejects_bad_input():
    from arctic_inference.vllm.fp32_lm_head import fp32_head_projection

    with pytest.raises(ValueError, match="hidden size 8"):
        fp32_head_projection(torch.randn(2, 8), torch.randn(10, 16))
    with pytest.raises(ValueError, match="chunk_bytes must be positive"):
        fp32_head_projection(torch.randn(2, 8), torch.randn(10, 8), chunk_bytes=0)


def test_processor_with_the_knob_off_keeps_vllm_projection(in_vllm_config):
    head, vanilla = _head_and_processor(torch.bfloat16)
    _, off = _head_and_processor(torch.bfloat16)
    off = _patched(off, knob=False)
    hidden = torch.randn(4, HIDDEN).to(torch.bfloat16)
    out = off(head, hidden)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out, vanilla(head, hidden))


def test_fp32_inputs_fall_through_to_vllm(in_vllm_config):
    head, vanilla = _head_and_processor(torch.float32)
    _, fp32 = _head_and_processor(torch.float32)
    fp32 = _patched(fp32)
    hidden = torch.randn(4, HIDDEN)
    assert torch.equal(fp32(head, hidden), vanilla(head, hidden))


def test_quantized_head_falls_through_to_vllm(in_vllm_config):
    """An AWQ-quantized head has no plain weight: vLLM's own path must run."""
    from vllm.model_executor.layers.quantization.auto_awq import AutoAWQConfig
    from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead

    from arctic_inference.vllm.fp32_lm_head import uses_fp32_projection

    quant = AutoAWQConfig(weight_bits=4, group_size=32, zero_point=True, lm_head_quantized=True)
    head = ParallelLMHead(320, 64, params_dtype=torch.float16, quant_config=quant, prefix="lm_head")
    hidden = torch.randn(2, 64).to(torch.float16)
    assert not uses_fp32_projection(head, hidden)

    _, vanilla = _head_and_processor(torch.float16)
    _, fp32 = _head_and_processor(torch.float16)
    fp32 = _patched(fp32)

    def outcome(processor):
        try:
            return ("ok", processor(head, hidden))
        except Exception as exc:  # AWQ kernels need CUDA; compare the failure
            return ("raised", f"{type(exc).__name__}: {exc}")

    got, want = outcome(fp32), outcome(vanilla)
    print("quantized head, stock vs patched:", want[0], "/", got[0], str(want[1])[:80])
    assert got[0] == want[0]
    if got[0] == "ok":
        assert torch.equal(got[1], want[1])
    else:
        assert got[1] == want[1]
