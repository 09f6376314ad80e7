"""A real vLLM 0.26.0 scheduler on the CPU, with prefix caching, for grouping tests.

Requests that share prompt prefixes get the same physical KV blocks from vLLM's own
KV-cache manager; the test reads them out of the real ``SchedulerOutput`` into a real
``BlockTable``, as the model runner does, and groups them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

BLOCK_SIZE = 16


def make_scheduler(model_dir: Path, *, num_blocks: int = 4096, max_num_seqs: int = 256):
    import torch
    from vllm.config import (
        CacheConfig,
        DeviceConfig,
        ModelConfig,
        SchedulerConfig,
        VllmConfig,
    )
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

    model = ModelConfig(model=str(model_dir), skip_tokenizer_init=True, max_model_len=8192)
    config = VllmConfig(
        model_config=model,
        cache_config=CacheConfig(block_size=BLOCK_SIZE, enable_prefix_caching=True),
        scheduler_config=SchedulerConfig(
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=65536,
            max_model_len=8192,
            is_encoder_decoder=False,
            enable_chunked_prefill=True,
        ),
        device_config=DeviceConfig(device="cpu"),
    )
    spec = FullAttentionSpec(
        block_size=BLOCK_SIZE, num_kv_heads=2, head_size=16, dtype=torch.float16
    )
    kv_config = KVCacheConfig(
        num_blocks=num_blocks,
        kv_cache_tensors=[
            KVCacheTensor(size=spec.page_size_bytes * num_blocks, shared_by=["layer0"])
        ],
        kv_cache_groups=[KVCacheGroupSpec(["layer0"], spec)],
    )
    config.cache_config.num_gpu_blocks = num_blocks
    init_none_hash(sha256)
    scheduler = Scheduler(
        vllm_config=config,
        kv_cache_config=kv_config,
        structured_output_manager=StructuredOutputManager(config),
        block_size=BLOCK_SIZE,
    )
    return scheduler


def make_request(request_id: str, prompt: list[int], max_tokens: int = 64):
    from vllm import SamplingParams
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher
    from vllm.v1.request import Request

    return Request(
        request_id=request_id,
        prompt_token_ids=prompt,
        sampling_params=SamplingParams(max_tokens=max_tokens, ignore_eos=True),
        pooling_params=None,
        block_hasher=get_request_block_hasher(BLOCK_SIZE, sha256),
    )


class RunnerBlockTable:
    """Rows of a real ``BlockTable`` kept the way the model runner keeps them.

    New requests get a row with their block ids; running requests have their newly
    allocated blocks appended. Row order is the order requests first appear.
    """

    def __init__(self, max_num_reqs: int = 256, max_blocks: int = 512) -> None:
        import torch
        from vllm.v1.worker.block_table import BlockTable

        self.table = BlockTable(
            block_size=BLOCK_SIZE,
            max_num_reqs=max_num_reqs,
            max_num_blocks_per_req=max_blocks,
            max_num_batched_tokens=65536,
            pin_memory=False,
            device=torch.device("cpu"),
            kernel_block_size=BLOCK_SIZE,
            cp_kv_cache_interleave_size=1,
        )
        self.rows: dict[str, int] = {}
        self.computed: dict[str, int] = {}

    def update(self, out) -> None:
        """Apply one ``SchedulerOutput`` (new and running requests)."""
        for req in out.scheduled_new_reqs:
            row = self.rows.setdefault(req.req_id, len(self.rows))
            self.table.add_row(list(req.block_ids[0]), row)
            self.computed[req.req_id] = req.num_computed_tokens
        cached = out.scheduled_cached_reqs
        for i, req_id in enumerate(cached.req_ids):
            new_blocks = cached.new_block_ids[i]
            if new_blocks is not None and new_blocks[0]:
                self.table.append_row(list(new_blocks[0]), self.rows[req_id])
            self.computed[req_id] = cached.num_computed_tokens[i]

    def numpy(self) -> np.ndarray:
        return self.table.get_numpy_array()[: len(self.rows)]

    def num_computed(self) -> np.ndarray:
        by_row = sorted(self.rows, key=self.rows.__getitem__)
        return np.asarray([self.computed[r] for r in by_row], dtype=np.int64)


def finish_step(scheduler, out, token: int = 1):
    """Tell the scheduler every scheduled request produced one token (as a runner would)."""
    from vllm.v1.outputs import ModelRunnerOutput

    req_ids = list(out.num_scheduled_tokens)
    runner_out = ModelRunnerOutput(
        req_ids=req_ids,
        req_id_to_index={r: i for i, r in enumerate(req_ids)},
        sampled_token_ids=[[token] for _ in req_ids],
    )
    scheduler.update_from_output(out, runner_out)
