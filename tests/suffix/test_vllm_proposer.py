"""vLLM 0.26.0's own SuffixDecodingProposer driving our cache on CPU.

Real objects: the proposer, its ``VllmConfig`` (a real ``ModelConfig`` read
offline from a config-only Llama directory, the ``SpeculativeConfig``, the CPU
``DeviceConfig``; all built and validated by vLLM itself) and the
``InputBatch`` it reads (``vllm.v1.worker.gpu_input_batch.InputBatch`` on
device=cpu, requests added and removed through its own ``add_request`` /
``remove_request`` / ``condense``).

Not real, and why:
- Pinned memory: ``InputBatch`` pins its CPU staging tensors when
  ``vllm.utils.torch_utils.PIN_MEMORY`` says so, and pinning needs a CUDA
  driver; the test sets the module's flag to False (pin_memory=False).
- The sampler: the runner appends each step's sampled ids to
  ``token_ids_cpu`` / ``num_tokens_no_spec`` (gpu_model_runner's bookkeeping)
  before it proposes; ``Runner.step`` does those two writes with chosen ids.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

# A config-only checkpoint: ModelConfig reads config.json and needs no weights.
TINY_LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 1000,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-5,
    "torch_dtype": "float32",
}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    (path / "config.json").write_text(json.dumps(TINY_LLAMA))
    return str(path)


@pytest.fixture
def make_proposer(model_dir):
    from vllm.config import DeviceConfig, ModelConfig, SpeculativeConfig, VllmConfig
    from vllm.v1.spec_decode.suffix_decoding import SuffixDecodingProposer

    def make(depth=16, num_spec=8, max_model_len=256):
        spec = SpeculativeConfig(
            method="suffix",
            num_speculative_tokens=num_spec,
            suffix_decoding_max_tree_depth=depth,
            suffix_decoding_max_cached_requests=100,
        )
        model = ModelConfig(model=model_dir, skip_tokenizer_init=True, max_model_len=max_model_len)
        cfg = VllmConfig(
            model_config=model, speculative_config=spec, device_config=DeviceConfig(device="cpu")
        )
        return SuffixDecodingProposer(cfg)

    return make


class Runner:
    """A real InputBatch on CPU, updated the way the GPU model runner updates it."""

    def __init__(self, monkeypatch, max_len=256, num_spec=8):
        import torch
        import vllm.v1.worker.gpu_input_batch as gib

        monkeypatch.setattr(gib, "PIN_MEMORY", False)
        self.batch = gib.InputBatch(
            max_num_reqs=8,
            max_model_len=max_len,
            max_num_batched_tokens=1024,
            device=torch.device("cpu"),
            vocab_size=1000,
            block_sizes=[16],
            kernel_block_sizes=[16],
            max_num_blocks_per_req=[max_len // 16],
            num_spec_tokens=num_spec,
        )
        self._state_cls = gib.CachedRequestState

    def add(self, req_id, prompt):
        from vllm import SamplingParams

        st = self._state_cls(
            req_id=req_id,
            prompt_token_ids=list(prompt),
            mm_features=[],
            sampling_params=SamplingParams(temperature=0.0),
            generator=None,
            block_ids=([0],),
            num_computed_tokens=0,
            output_token_ids=[],
        )
        return self.batch.add_request(st)

    def remove(self, req_id):
        self.batch.remove_request(req_id)
        self.batch.condense()

    def step(self, sampled: dict) -> list[list[int]]:
        """Write each request's sampled ids; returns them in batch order."""
        b = self.batch
        out = []
        for i, rid in enumerate(b.req_ids):
            toks = sampled.get(rid, [])
            n = int(b.num_tokens_no_spec[i])
            b.token_ids_cpu[i, n : n + len(toks)] = toks
            b.num_tokens_no_spec[i] = n + len(toks)
            out.append(list(toks))
        return out


def test_vllm_detects_the_package_and_accepts_the_config():
    from vllm.config import SpeculativeConfig
    from vllm.utils.import_utils import has_arctic_inference

    assert has_arctic_inference()
    # Left unset, vLLM sets num_speculative_tokens to the tree depth.
    cfg = SpeculativeConfig(
        method="suffix", suffix_decoding_max_tree_depth=24, suffix_decoding_max_cached_requests=10
    )
    assert cfg.num_speculative_tokens == 24


def test_real_proposer_drafts_copies_and_stops_requests(monkeypatch, make_proposer):
    from arctic_inference.suffix_decoding import SuffixDecodingCache

    prop = make_proposer()
    assert isinstance(prop.suffix_cache, SuffixDecodingCache)
    span = [11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
    run = Runner(monkeypatch)
    prompt = [1, 2] + span + [3, 4] + span[:3]
    run.add("a", prompt)
    run.add("b", [50, 51, 52])
    # Prefill step: each request samples one token.
    drafts = prop.propose(8, run.batch, run.step({"a": [span[3]], "b": [53]}))
    # "a" re-quotes the span: the draft copies what followed it in the prompt.
    assert drafts[0] == prompt[6 : 6 + len(drafts[0])] and len(drafts[0]) >= 4
    assert drafts[1] == []
    assert set(prop.suffix_cache.active_requests) == {"a", "b"}
    # Accept four and add a bonus token: the next draft is still a copy.
    drafts = prop.propose(8, run.batch, run.step({"a": span[4:8] + [span[8]], "b": [54]}))
    after = [span[9], 3, 4, span[0], span[1], span[2], span[3], span[4]]
    assert len(drafts[0]) >= 2 and drafts[0] == after[: len(drafts[0])]
    # "b" leaves the batch: the proposer stops it, its response stays cached.
    run.remove("b")
    prop.propose(8, run.batch, run.step({"a": [span[9]]}))
    assert set(prop.suffix_cache.active_requests) == {"a"}
    assert "b" in prop.suffix_cache.cached_requests
    # A new request that repeats b's prompt gets b's response from the global tree.
    run.add("c", [50, 51, 52])
    drafts = prop.propose(8, run.batch, run.step({"a": [3], "c": [53]}))
    assert run.batch.req_ids == ["a", "c"]
    assert drafts[1][:1] == [54]


def test_partial_prefill_and_max_len_get_no_draft(monkeypatch, make_proposer):
    prop = make_proposer(max_model_len=8)
    run = Runner(monkeypatch, max_len=16)
    run.add("a", [1, 2, 3, 1, 2, 3, 1])
    assert prop.propose(8, run.batch, run.step({"a": [2]})) == [[]]  # reaches max_model_len
    assert prop.propose(8, run.batch, [[]]) == [[]]


def test_token_ids_come_from_the_real_batch_arrays(monkeypatch, make_proposer):
    prop = make_proposer()
    run = Runner(monkeypatch)
    idx = run.add("r", [7, 8, 9, 7, 8])
    assert run.batch.token_ids_cpu.dtype == np.int32 and idx == 0
    drafts = prop.propose(8, run.batch, run.step({"r": [9]}))
    # Context ...7 8 9 matches the prompt's first 7 8 9, followed by 7 8 9.
    assert drafts[0][:2] == [7, 8]
