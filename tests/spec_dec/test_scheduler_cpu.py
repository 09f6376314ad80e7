"""Draft lengths that vary per request, on vLLM 0.26.0's real scheduler.

vLLM turns async scheduling off for the arctic method (it keeps async for
EAGLE-like drafters only), so every step the engine hands the scheduler each
request's real draft (``update_draft_token_ids``) and the next step reserves
exactly that many speculative slots: a 3-token speculator draft is not padded
to the suffix tree depth. These tests drive the real ``Scheduler`` through two
steps with a 3-token and an 8-token draft and check the scheduled slots and
the per-position acceptance statistics.
"""

from __future__ import annotations

import pytest

from tests.forest.real_scheduler import finish_step, make_request
from tests.spec_dec.conftest import make_spec_ckpt
from tests.spec_dec.test_spec_config import target, target_config  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("registered")


@pytest.fixture
def arctic(reverted_patches):
    from arctic_inference.vllm.spec_dec.spec_config import (
        SpeculativeConfigArcticPatch,
        extend_speculative_config,
    )

    SpeculativeConfigArcticPatch.apply()
    extend_speculative_config()


def _vllm_config(target_config, spec_root, **scheduler):  # noqa: F811
    from vllm.config import (
        CacheConfig,
        DeviceConfig,
        ParallelConfig,
        SchedulerConfig,
        SpeculativeConfig,
        VllmConfig,
    )

    ckpt = make_spec_ckpt(spec_root, "sched-lstm", kind="lstm")
    spec = SpeculativeConfig(
        method="arctic",
        model=str(ckpt),
        enable_suffix_decoding=True,
        num_speculative_tokens=8,
        target_model_config=target_config,
        target_parallel_config=ParallelConfig(),
    )
    return VllmConfig(
        model_config=target_config,
        cache_config=CacheConfig(block_size=16, enable_prefix_caching=False),
        scheduler_config=SchedulerConfig(
            max_num_seqs=8,
            max_num_batched_tokens=1024,
            max_model_len=256,
            is_encoder_decoder=False,
            **scheduler,
        ),
        speculative_config=spec,
        device_config=DeviceConfig(device="cpu"),
    )


def _scheduler(config):
    import torch
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_utils import init_none_hash
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        KVCacheConfig,
        KVCacheGroupSpec,
        KVCacheTensor,
    )
    from vllm.v1.structured_output import StructuredOutputManager

    blocks = 256
    spec = FullAttentionSpec(block_size=16, num_kv_heads=2, head_size=16, dtype=torch.float16)
    kv = KVCacheConfig(
        num_blocks=blocks,
        kv_cache_tensors=[KVCacheTensor(size=spec.page_size_bytes * blocks, shared_by=["l0"])],
        kv_cache_groups=[KVCacheGroupSpec(["l0"], spec)],
    )
    config.cache_config.num_gpu_blocks = blocks
    init_none_hash(sha256)
    return Scheduler(
        vllm_config=config,
        kv_cache_config=kv,
        structured_output_manager=StructuredOutputManager(config),
        block_size=16,
        log_stats=True,
    )


def test_async_scheduling_is_off_for_the_arctic_method(arctic, target_config, spec_root):  # noqa: F811
    assert _vllm_config(target_config, spec_root).scheduler_config.async_scheduling is False
    with pytest.raises(ValueError, match="async scheduling is only supported"):
        _vllm_config(target_config, spec_root, async_scheduling=True)


def _step(scheduler, out, sampled: dict[str, list[int]]):
    from vllm.v1.outputs import ModelRunnerOutput

    req_ids = list(out.num_scheduled_tokens)
    result = scheduler.update_from_output(
        out,
        ModelRunnerOutput(
            req_ids=req_ids,
            req_id_to_index={r: i for i, r in enumerate(req_ids)},
            sampled_token_ids=[sampled[r] for r in req_ids],
        ),
    )
    return result[0].scheduler_stats


def test_each_request_reserves_its_own_real_draft_length(arctic, target_config, spec_root):  # noqa: F811
    from vllm.v1.outputs import DraftTokenIds

    scheduler = _scheduler(_vllm_config(target_config, spec_root))
    for req_id in ("arctic", "suffix"):
        scheduler.add_request(make_request(req_id, list(range(10, 30))))
    finish_step(scheduler, scheduler.schedule())  # the prefill samples one token each

    scheduler.update_draft_token_ids(
        DraftTokenIds(["arctic", "suffix"], [[41, 42, 43], [51, 52, 53, 54, 55, 56, 57, 58]])
    )
    out = scheduler.schedule()
    assert out.num_scheduled_tokens == {"arctic": 4, "suffix": 9}
    assert out.scheduled_spec_decode_tokens == {
        "arctic": [41, 42, 43],
        "suffix": [51, 52, 53, 54, 55, 56, 57, 58],
    }

    # The verifier kept two of the speculator's tokens and all eight of the suffix's.
    stats = _step(
        scheduler, out, {"arctic": [41, 42, 99], "suffix": [51, 52, 53, 54, 55, 56, 57, 58, 59]}
    )
    spec = stats.spec_decoding_stats
    assert (spec.num_drafts, spec.num_draft_tokens, spec.num_accepted_tokens) == (2, 11, 10)
    assert spec.num_draft_tokens_per_pos == [2, 2, 2, 1, 1, 1, 1, 1]
    assert spec.num_accepted_tokens_per_pos == [2, 2, 1, 1, 1, 1, 1, 1]

    # Next step the suffix request switched to a 3-token speculator draft: 3 slots, not 8.
    scheduler.update_draft_token_ids(DraftTokenIds(["arctic", "suffix"], [[], [61, 62, 63]]))
    out = scheduler.schedule()
    assert out.num_scheduled_tokens == {"arctic": 1, "suffix": 4}
