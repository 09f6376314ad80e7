"""Deferred following of the suffix cache against following every step.

The batch is vLLM's real ``InputBatch`` on the CPU, driven the way the model
runner's bookkeeping drives it (requests join, sample, leave, rows condense);
both caches are real ``SuffixDecodingCache`` objects. The reference follows
every step, as vLLM's suffix proposer does; the deferred one only notes the
tokens of steps at or over the batch cap.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from arctic_inference.suffix_decoding import SuffixDecodingCache
from arctic_inference.vllm.spec_dec.suffix_follow import (
    DeferredFollow,
    follow_request,
    stop_departed,
)
from tests.suffix.test_vllm_proposer import Runner

VOCAB = 6  # a small vocabulary repeats itself, so the trees have drafts to give
DEPTH = 8


def _cache() -> SuffixDecodingCache:
    return SuffixDecodingCache(max_tree_depth=DEPTH, max_cached_requests=-1, policy=None)


def _follow_every_step(cache, batch, sampled) -> None:
    for i, tokens in enumerate(sampled):
        if tokens:
            follow_request(cache, batch, i, tokens)
    stop_departed(cache, batch)


def _shape(cache) -> dict[str, int]:
    return {k: v for k, v in cache.stats().items() if not k.endswith("_bytes")}


def _drafts(cache, batch) -> list[tuple[list[int], float]]:
    out = []
    for i, req_id in enumerate(batch.req_ids):
        if req_id not in cache.active_requests:  # nothing sampled yet
            continue
        n = int(batch.num_tokens_no_spec[i])
        pattern = batch.token_ids_cpu[i, max(0, n - DEPTH) : n]
        draft = cache.speculate(req_id, pattern, max_spec_tokens=DEPTH)
        out.append((list(draft.token_ids), round(float(draft.score), 9)))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_drafting_steps_see_the_trees_that_following_every_step_builds(monkeypatch, seed):
    rng = random.Random(seed)
    runner = Runner(monkeypatch, max_len=256)
    batch = runner.batch
    eager, deferred_cache = _cache(), _cache()
    follow = DeferredFollow(deferred_cache)
    cap, next_id, compared, capped_steps = 4, 0, 0, 0
    for step in range(240):
        growing = (step // 15) % 2 == 0  # the batch grows past the cap, then drains below it
        live = list(batch.req_ids)
        if live and rng.random() < (0.15 if growing else 0.45):
            runner.remove(rng.choice(live))
        if len(batch.req_ids) < 7 and rng.random() < (0.5 if growing else 0.1):
            while f"r{next_id % 9}" in batch.req_id_to_index:
                next_id += 1
            # Ids come back (r0 again after r8): a cached response is replaced.
            runner.add(f"r{next_id % 9}", [rng.randrange(VOCAB) for _ in range(rng.randint(3, 12))])
            next_id += 1
        batch.refresh_metadata()  # the runner's end of a step's state update
        live = list(batch.req_ids)
        if not live:
            continue
        sampled = runner.step(
            {r: [rng.randrange(VOCAB) for _ in range(rng.randint(0, 3))] for r in live}
        )
        _follow_every_step(eager, batch, sampled)
        if len(live) >= cap:
            follow.defer(batch, sampled)
            capped_steps += 1
            continue
        follow.catch_up(batch)
        _follow_every_step(deferred_cache, batch, sampled)
        assert follow.pending == {}
        assert set(deferred_cache.active_requests) == set(eager.active_requests)
        assert set(deferred_cache.cached_requests) == set(eager.cached_requests)
        # The same trees, node for node (bytes follow the allocation history, not the content).
        assert _shape(deferred_cache) == _shape(eager)
        assert _drafts(deferred_cache, batch) == _drafts(eager, batch)
        compared += 1
    # The schedule crossed the cap both ways many times (a run that never did would prove nothing).
    assert compared > 20 and capped_steps > 20


def test_requests_that_live_and_leave_over_the_cap_build_no_request_tree(monkeypatch):
    runner = Runner(monkeypatch, max_len=256)
    cache = _cache()
    follow = DeferredFollow(cache)
    for k in range(4):
        runner.add(f"r{k}", [1, 2, 3])
    for step in range(5):
        follow.defer(runner.batch, runner.step({r: [10 + step] for r in runner.batch.req_ids}))
    assert cache.stats()["active"] == 0 and cache.stats()["request_nodes"] == 0
    assert follow.pending["r0"] == [10, 11, 12, 13, 14]
    runner.remove("r0")
    follow.defer(runner.batch, runner.step({r: [20] for r in runner.batch.req_ids}))
    # r0 left: its whole response went to the global tree in one piece.
    assert "r0" in cache.cached_requests and "r0" not in follow.pending
    follow.catch_up(runner.batch)
    assert set(cache.active_requests) == {"r1", "r2", "r3"} and follow.pending == {}
    cache.start_request("probe", [7])
    draft = cache.speculate("probe", np.array([10, 11, 12]), 4)
    assert draft.token_ids[:2] == [13, 14] and draft.source == "global"
