"""SuffixDecodingCache: lifecycle, eviction, policy and error handling."""

from __future__ import annotations

import numpy as np
import pytest

from arctic_inference.suffix_decoding import LoadAwareBackoff, SuffixDecodingCache


def make(**kw) -> SuffixDecodingCache:
    kw.setdefault("policy", None)
    return SuffixDecodingCache(max_tree_depth=kw.pop("depth", 16), **kw)


def test_prompt_tree_drafts_a_repeated_span():
    c = make()
    prompt = np.array([5, 6, 7, 8, 9, 10, 1, 2, 5, 6, 7], dtype=np.int64)
    c.start_request("r", prompt)
    c.add_active_response("r", [8])
    d = c.speculate("r", np.array([5, 6, 7, 8]), max_spec_tokens=8)
    # Match [5, 6, 7, 8] (length 4) caps the draft at 4 tokens.
    assert d.token_ids == [9, 10, 1, 2] and d.source == "request"
    assert d.match_len == 4 and d.probs == [1.0] * 4 and d.score == 4.0
    assert not d.is_tree


def test_match_length_and_factor_limit_the_draft():
    c = make()
    c.start_request("r", list(range(10)) + [0, 1])
    assert len(c.speculate("r", [0, 1], 8, max_spec_factor=1.0).token_ids) == 2
    assert len(c.speculate("r", [0, 1], 8, max_spec_factor=0.5).token_ids) == 1
    assert len(c.speculate("r", [0, 1], 8, max_spec_factor=0.5, max_spec_offset=3).token_ids) == 4
    assert len(c.speculate("r", [0, 1], 3, max_spec_factor=4).token_ids) == 3
    assert c.speculate("r", [42], 8).token_ids == []


def test_min_token_prob_cuts_unlikely_branches():
    c = make()
    # After [1] comes 2 three times and 3 once.
    c.start_request("r", [1, 2, 9, 1, 2, 9, 1, 2, 9, 1, 3, 9])
    d = c.speculate("r", [4, 1], 4, max_spec_factor=4, min_token_prob=0.5)
    # [1, 2, 9, 1] is followed by 2 twice and 3 once: 0.75 * 2/3 = 0.5.
    assert d.token_ids == [2, 9, 1, 2] and np.allclose(d.probs, [0.75, 0.75, 0.75, 0.5])
    d = c.speculate("r", [4, 1], 4, max_spec_factor=4, min_token_prob=0.6)
    assert d.token_ids == [2, 9, 1]
    assert c.speculate("r", [4, 1], 4, max_spec_factor=4, min_token_prob=0.8).token_ids == []


def test_global_tree_serves_a_repeated_response_and_wins_by_score():
    c = make()
    c.start_request("a", [100, 101])
    c.add_active_response("a", [1, 2, 3, 4, 5, 6])
    c.stop_request("a")
    assert "a" in c.cached_requests and "a" not in c.active_requests
    c.start_request("b", [100, 102])
    c.add_active_response("b", [1, 2])
    d = c.speculate("b", [100, 102, 1, 2], 8)
    assert d.token_ids == [3, 4] and d.source == "global"


def test_tree_draft_only_when_it_pays():
    c = make(tree_min_gain=0.25)
    # After [1]: 2 or 3 equally often, each followed by a fixed token, then noise.
    c.start_request("r", [1, 2, 7, 5, 1, 3, 8, 6, 1, 2, 7, 4, 1, 3, 8, 9])
    path = c.speculate("r", [0, 1], 4, max_spec_factor=4, min_token_prob=0.1)
    tree = c.speculate("r", [0, 1], 4, max_spec_factor=4, min_token_prob=0.1, use_tree_spec=True)
    assert not path.is_tree and tree.is_tree
    assert path.token_ids == [2, 7, 4, 1] and np.isclose(path.score, 1.5)
    assert np.isclose(tree.score, 2.0)
    assert tree.token_ids == [2, 3, 7, 8] and tree.parents == [-1, -1, 0, 1]
    # A certain continuation gives a path even when trees are allowed.
    c.start_request("s", [4, 5, 6, 4, 5])
    assert not c.speculate("s", [4, 5], 4, max_spec_factor=4, use_tree_spec=True).is_tree


def test_lru_eviction_keeps_the_most_recent_responses():
    c = make(max_cached_requests=3)
    for i in range(5):
        c.start_request(f"r{i}", [i])
        c.add_active_response(f"r{i}", [50 + i, 60 + i])
        c.stop_request(f"r{i}")
    assert list(c.cached_requests) == ["r2", "r3", "r4"]
    assert c.global_tree.count([50]) == 0 and c.global_tree.count([54, 64]) == 1
    # Writing to a cached request's response refreshes it.
    c.start_request("x", [1])
    c.start_request("y", [1])
    c.add_active_response("x", [7])
    assert list(c.cached_requests) == ["r4", "y", "x"]
    c.evict_cached_response("x")
    assert "x" in c.active_requests and "x" not in c.cached_requests
    c.add_active_response("x", [8])  # still fine: request tree only
    assert c.global_tree.count([7]) == 0


def test_eviction_spares_the_response_of_a_request_still_active():
    """A full cache evicts the oldest *finished* response, even when an active
    request's response is older: that one is still being written and drafted from."""
    c = make(max_cached_requests=2)
    c.start_request("long", [1])  # the oldest entry; stays active throughout
    c.add_active_response("long", [10, 11, 12])
    c.start_request("done", [2])
    c.add_active_response("done", [20, 21])
    c.stop_request("done")
    assert list(c.cached_requests) == ["long", "done"]  # "long" is the least recent

    c.start_request("new", [3])  # full: one response must go

    assert list(c.cached_requests) == ["long", "new"]
    assert c.global_tree.count([10, 11, 12]) == 1, "the active request's response was evicted"
    assert c.global_tree.count([20, 21]) == 0
    c.add_active_response("long", [13])  # its global sequence keeps growing
    assert c.global_tree.count([11, 12, 13]) == 1
    assert c.speculate("new", [10, 11], 2, max_spec_factor=2).token_ids == [12, 13]


def test_eviction_falls_back_to_the_oldest_active_response_when_all_are_active():
    c = make(max_cached_requests=1)
    c.start_request("a", [1])
    c.add_active_response("a", [10, 11])
    c.start_request("b", [2])  # nothing finished: a's response is the only candidate
    assert list(c.cached_requests) == ["b"] and "a" in c.active_requests
    assert c.global_tree.count([10, 11]) == 0
    c.add_active_response("a", [12])  # still active: its request tree keeps working
    assert c.request_tree("a").count([10, 11, 12]) == 1


def test_zero_cached_requests_disables_the_global_tree():
    c = make(max_cached_requests=0)
    c.start_request("a", [1, 2])
    c.add_active_response("a", [3, 4])
    c.stop_request("a")
    assert len(c.cached_requests) == 0 and c.global_tree.num_tokens == 0


def test_restart_of_a_cached_request_replaces_its_response():
    c = make()
    c.start_request("a", [1])
    c.add_active_response("a", [2, 3])
    c.stop_request("a")
    c.start_request("a", [1])
    assert c.global_tree.count([2, 3]) == 0 and "a" in c.cached_requests


def test_error_cases():
    c = make()
    c.start_request("a", [1, 2])
    with pytest.raises(ValueError, match="already active"):
        c.start_request("a", [1, 2])
    for call in (
        lambda: c.add_active_response("nope", [1]),
        lambda: c.speculate("nope", [1]),
        lambda: c.stop_request("nope"),
        lambda: c.evict_cached_response("nope"),
    ):
        with pytest.raises(KeyError, match="nope"):
            call()
    for bad in ([1, -2], [1.0], np.array([0.5]), "12", [None]):
        with pytest.raises(ValueError):
            c.add_active_response("a", bad)
        with pytest.raises(ValueError):
            c.speculate("a", bad)
        with pytest.raises(ValueError):
            c.start_request("fresh", bad)
    assert "fresh" not in c.active_requests and "fresh" not in c.cached_requests
    with pytest.raises(ValueError):
        c.start_request(None, [1])
    with pytest.raises(ValueError):
        c.speculate("a", [1], min_token_prob=2.0)
    with pytest.raises(ValueError):
        SuffixDecodingCache(max_tree_depth=0)
    assert c.request_tree("a").num_tokens == 2  # nothing half-applied


def test_backoff_pauses_failing_requests_only_under_load():
    policy = LoadAwareBackoff(busy_batch_size=2, start_budget=2, max_skip=4)
    c = SuffixDecodingCache(max_tree_depth=16, policy=policy)
    prompt = [1, 2, 3, 4, 5, 6, 7, 8] * 3
    for r in ("a", "b"):
        c.start_request(r, prompt)
    # Busy: first draft capped by the starting budget.
    d = c.speculate("a", prompt[-8:], 8)
    assert len(d.token_ids) == 2
    c.add_active_response("a", [9])  # draft fully rejected -> sits out one step
    assert c.speculate("a", prompt[-8:] + [9], 8).token_ids == []
    # Fully accepted drafts double the budget.
    d = c.speculate("b", prompt[-8:], 8)
    c.add_active_response("b", d.token_ids + [3])
    assert (
        len(c.speculate("b", prompt[-8:] + d.token_ids + [3], 8, max_spec_factor=4).token_ids) == 4
    )
    # Alone in the batch: no cap, no pause.
    c.stop_request("b")
    c.add_active_response("a", [9])
    assert len(c.speculate("a", prompt[-8:], 8).token_ids) == 8


def test_cache_response_leaves_the_global_tree_as_a_started_fed_and_stopped_request():
    eager, direct = make(), make()
    eager.start_request("a", [100, 101])
    for token in [1, 2, 3, 4, 5]:
        eager.add_active_response("a", [token])
    eager.stop_request("a")
    direct.cache_response("a", [1, 2, 3, 4, 5])
    for c in (eager, direct):
        assert "a" in c.cached_requests and "a" not in c.active_requests
        c.start_request("b", [7, 1, 2])
        assert c.speculate("b", [7, 1, 2], 8).token_ids == [3, 4]  # found in the global tree
    assert direct.stats()["global_nodes"] == eager.stats()["global_nodes"]
    assert direct.stats()["request_nodes"] == eager.stats()["request_nodes"]


def test_cache_response_replaces_an_old_response_and_keeps_the_limit():
    c = make(max_cached_requests=2)
    c.cache_response("a", [1, 2, 3])
    c.cache_response("a", [4, 5, 6])  # the id came back: its new response replaces the old
    assert c.global_tree.count([2, 3]) == 0 and c.global_tree.count([5, 6]) == 1
    c.cache_response("b", [7, 8])
    c.cache_response("c", [9, 10])
    assert list(c.cached_requests) == ["b", "c"]  # "a" was the oldest


def test_cache_response_refuses_active_requests_and_bad_tokens():
    c = make()
    c.start_request("a", [1, 2])
    with pytest.raises(ValueError, match="active"):
        c.cache_response("a", [3])
    with pytest.raises(ValueError):
        c.cache_response("b", [1, -2])
    assert "b" not in c.cached_requests  # nothing recorded for the refused response
    off = make(max_cached_requests=0)
    off.cache_response("a", [1, 2])
    assert len(off.cached_requests) == 0 and off.global_tree.num_tokens == 0
