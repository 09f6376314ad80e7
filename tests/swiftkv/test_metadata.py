"""Attention metadata restricted to the logits tokens, on vLLM's real metadata classes."""

from __future__ import annotations

import pytest
import torch


def _meta(cls_name: str):
    qsl = torch.tensor([0, 5, 6, 14], dtype=torch.int32)  # prefill 5, decode 1, chunk 8
    common = dict(
        num_actual_tokens=14,
        max_query_len=8,
        query_start_loc=qsl,
        max_seq_len=40,
        seq_lens=torch.tensor([5, 30, 40], dtype=torch.int32),
        block_table=torch.zeros(3, 4, dtype=torch.int32),
        slot_mapping=torch.arange(100, 114),
        use_cascade=True,
        common_prefix_len=16,
        cu_prefix_query_lens=qsl,
        prefix_kv_lens=qsl,
        suffix_kv_lens=qsl,
        scheduler_metadata=torch.zeros(3),
    )
    if cls_name == "flash":
        from vllm.v1.attention.backends.flash_attn import FlashAttentionMetadata

        return FlashAttentionMetadata(**common, max_num_splits=4)
    from vllm.v1.attention.backends.triton_attn import TritonAttentionMetadata

    return TritonAttentionMetadata(
        **common,
        seq_threshold_3D=8,
        num_par_softmax_segments=16,
        softmax_segm_output=torch.zeros(1),
        softmax_segm_max=torch.zeros(1),
        softmax_segm_expsum=torch.zeros(1),
        causal=True,
    )


@pytest.mark.parametrize("kind", ["flash", "triton"])
def test_one_query_per_request_over_the_same_kv(kind):
    from arctic_inference.vllm.swiftkv.metadata import (
        has_prompt_tokens,
        logits_token_indices,
        restrict_to_logits_tokens,
    )

    meta = _meta(kind)
    assert has_prompt_tokens(meta)
    idx = logits_token_indices(meta)
    assert idx.tolist() == [4, 5, 13]
    small = restrict_to_logits_tokens(meta, idx)
    assert type(small) is type(meta)
    assert small.num_actual_tokens == 3 and small.max_query_len == 1
    assert small.query_start_loc.tolist() == [0, 1, 2, 3]
    assert small.query_start_loc.dtype == torch.int32
    assert small.slot_mapping.tolist() == [104, 105, 113]
    assert small.seq_lens is meta.seq_lens and small.block_table is meta.block_table
    assert small.max_seq_len == 40
    assert not small.use_cascade and small.scheduler_metadata is None
    assert meta.num_actual_tokens == 14 and meta.use_cascade  # the original is untouched


def test_decode_only_batch_keeps_the_full_path():
    from arctic_inference.vllm.swiftkv.metadata import has_prompt_tokens

    meta = _meta("triton")
    import dataclasses

    decode = dataclasses.replace(
        meta,
        num_actual_tokens=3,
        max_query_len=1,
        query_start_loc=torch.tensor([0, 1, 2, 3], dtype=torch.int32),
    )
    assert not has_prompt_tokens(decode)


def test_other_backends_are_refused():
    import dataclasses

    from arctic_inference.vllm.swiftkv.metadata import (
        UnsupportedAttentionMetadata,
        restrict_to_logits_tokens,
    )

    @dataclasses.dataclass
    class FlashInferMetadata:
        num_actual_tokens: int

    with pytest.raises(UnsupportedAttentionMetadata, match="FlashInferMetadata"):
        restrict_to_logits_tokens(FlashInferMetadata(3), torch.tensor([0]))


def test_forest_plan_of_the_flash_attn_fork_is_dropped():
    """With the plugin on, FLASH_ATTN layers carry the fork's metadata; a forest plan
    groups the full batch's queries and must not reach the logits-token attention."""
    import dataclasses

    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config

    from arctic_inference.vllm.swiftkv.metadata import (
        logits_token_indices,
        restrict_to_logits_tokens,
    )

    with set_current_vllm_config(VllmConfig(device_config=DeviceConfig(device="cpu"))):
        from arctic_inference.vllm.attention import flash_attn_fork as fork
    upstream = _meta("flash")
    fields = {f.name: getattr(upstream, f.name) for f in dataclasses.fields(upstream)}
    plan = object()  # stands for the step's ForestPlan; only its removal is checked
    meta = fork.FlashAttentionMetadata(**fields, forest=plan)
    small = restrict_to_logits_tokens(meta, logits_token_indices(meta))
    assert type(small) is fork.FlashAttentionMetadata
    assert small.forest is None and meta.forest is plan
    assert small.num_actual_tokens == 3
