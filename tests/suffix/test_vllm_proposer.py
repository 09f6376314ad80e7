"""vLLM 0.26.0's own SuffixDecodingProposer driving our cache on CPU.

The proposer only reads a few config fields and InputBatch arrays, so it is
constructed with minimal stand-ins for those and otherwise runs unmodified.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm


def make_proposer(depth=16, num_spec=8, max_model_len=256):
    from vllm.v1.spec_decode.suffix_decoding import SuffixDecodingProposer

    spec = SimpleNamespace(
        num_speculative_tokens=num_spec,
        suffix_decoding_max_tree_depth=depth,
        suffix_decoding_max_spec_factor=1.0,
        suffix_decoding_min_token_prob=0.1,
        suffix_decoding_max_cached_requests=100,
    )
    cfg = SimpleNamespace(speculative_config=spec, model_config=SimpleNamespace(max_model_len=max_model_len))
    return SuffixDecodingProposer(cfg)


class Batch:
    """The InputBatch fields the proposer reads, kept like the runner keeps them."""

    def __init__(self, max_len=256):
        self.req_ids: list[str] = []
        self.token_ids_cpu = np.zeros((8, max_len), dtype=np.int32)
        self.num_tokens_no_spec = np.zeros(8, dtype=np.int32)
        self.num_prompt_tokens = np.zeros(8, dtype=np.int32)

    @property
    def req_id_to_index(self):
        return {r: i for i, r in enumerate(self.req_ids)}

    def add(self, rid, prompt):
        i = len(self.req_ids)
        self.req_ids.append(rid)
        self.token_ids_cpu[i, : len(prompt)] = prompt
        self.num_tokens_no_spec[i] = self.num_prompt_tokens[i] = len(prompt)

    def append(self, i, toks):
        n = self.num_tokens_no_spec[i]
        self.token_ids_cpu[i, n : n + len(toks)] = toks
        self.num_tokens_no_spec[i] = n + len(toks)


def test_vllm_detects_the_package_and_accepts_the_config():
    from vllm.config.speculative import SpeculativeConfig
    from vllm.utils.import_utils import has_arctic_inference

    assert has_arctic_inference()
    stub = SimpleNamespace(
        num_speculative_tokens=None,
        suffix_decoding_max_tree_depth=24,
        suffix_decoding_max_cached_requests=10,
        suffix_decoding_max_spec_factor=1.0,
        suffix_decoding_min_token_prob=0.1,
    )
    SpeculativeConfig._validate_suffix_decoding(stub)
    assert stub.num_speculative_tokens == 24


def test_real_proposer_drafts_copies_and_stops_requests():
    from arctic_inference.suffix_decoding import SuffixDecodingCache

    prop = make_proposer()
    assert isinstance(prop.suffix_cache, SuffixDecodingCache)
    span = [11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
    batch = Batch()
    batch.add("a", [1, 2] + span + [3, 4] + span[:3])
    batch.add("b", [50, 51, 52])
    # Prefill step: each request samples one token.
    first = [[span[3]], [53]]
    for i, t in enumerate(first):
        batch.append(i, t)
    drafts = prop.propose(8, batch, first)
    # "a" re-quotes the span: the draft continues it (match length 4 caps it at 4).
    assert drafts[0] == span[4:8]
    assert drafts[1] == []
    assert set(prop.suffix_cache.active_requests) == {"a", "b"}
    # All four accepted plus a bonus token: next draft is longer and still right.
    step = [span[4:8] + [span[8]], [54]]
    for i, t in enumerate(step):
        batch.append(i, t)
    drafts = prop.propose(8, batch, step)
    assert drafts[0] == [span[9], 3, 4, span[0], span[1], span[2], span[3], span[4]][: len(drafts[0])]
    assert len(drafts[0]) >= 2
    # "b" leaves the batch: the proposer stops it, its response stays cached.
    batch.req_ids = ["a"]
    prop.propose(8, batch, [[span[9]]])
    assert set(prop.suffix_cache.active_requests) == {"a"}
    assert "b" in prop.suffix_cache.cached_requests
    # A new request that repeats b's prompt gets b's response from the global tree.
    batch.req_ids = ["a", "c"]
    batch.token_ids_cpu[1] = 0
    batch.num_tokens_no_spec[1] = batch.num_prompt_tokens[1] = 0
    batch.token_ids_cpu[1, :3] = [50, 51, 52]
    batch.num_tokens_no_spec[1] = batch.num_prompt_tokens[1] = 3
    batch.append(1, [53])
    batch.append(0, [3])
    drafts = prop.propose(8, batch, [[3], [53]])
    assert drafts[1][:1] == [54]


def test_partial_prefill_and_max_len_get_no_draft():
    prop = make_proposer(max_model_len=8)
    batch = Batch()
    batch.add("a", [1, 2, 3, 1, 2, 3, 1])
    batch.append(0, [2])  # reaches max_model_len
    assert prop.propose(8, batch, [[2]]) == [[]]
    assert prop.propose(8, batch, [[]]) == [[]]
