"""Which response the global tree gives up when it is full, and the cache's input rules.

A running request keeps drafting from its own response in the global tree; evicting it
while finished responses are still cached would throw away the most useful entry.
"""

from __future__ import annotations

import pytest

from arctic_inference.suffix_decoding import SlipRecovery, SuffixDecodingCache


def make(**kw) -> SuffixDecodingCache:
    kw.setdefault("max_tree_depth", 16)
    return SuffixDecodingCache(policy=None, recovery=False, **kw)


def test_full_cache_evicts_a_finished_response_before_an_older_active_one() -> None:
    c = make(max_cached_requests=2)
    c.start_request("active", [1])
    c.add_active_response("active", [10, 11, 12])
    c.start_request("done", [1])
    c.add_active_response("done", [20, 21])
    c.stop_request("done")
    c.start_request("new", [1])
    # 'active' is the least recently written, but still running: 'done' goes.
    assert list(c.cached_requests) == ["active", "new"]
    assert c.global_tree.count([10, 11, 12]) == 1
    assert c.global_tree.count([20]) == 0
    assert c.stats()["global_tokens"] == 3


def test_full_cache_of_active_requests_evicts_the_least_recently_written() -> None:
    c = make(max_cached_requests=2)
    c.start_request("a", [1])
    c.start_request("b", [1])
    c.add_active_response("b", [5])
    c.add_active_response("a", [6])  # a is now the most recently written
    c.start_request("c", [1])
    assert list(c.cached_requests) == ["a", "c"]
    # b keeps running on its request tree, without a global response.
    assert "b" in c.active_requests
    c.add_active_response("b", [7])
    assert c.global_tree.count([5]) == 0 and c.global_tree.count([7]) == 0
    with pytest.raises(KeyError, match="no cached response"):
        c.evict_cached_response("b")


def test_unlimited_cache_never_evicts() -> None:
    c = make(max_cached_requests=-1)
    for i in range(20):
        c.start_request(i, [1])
        c.add_active_response(i, [100 + i])
        c.stop_request(i)
    assert list(c.cached_requests) == list(range(20))
    assert c.stats()["cached"] == 20 and c.stats()["active"] == 0


def test_stopped_request_is_no_longer_active_but_stays_cached() -> None:
    c = make()
    c.start_request("r", [1, 2])
    c.add_active_response("r", [3, 4])
    c.stop_request("r")
    assert "r" not in c.active_requests and "r" in c.cached_requests
    with pytest.raises(KeyError, match="not active"):
        c.speculate("r", [3])


def test_stats_count_every_tree() -> None:
    c = make()
    c.start_request("r", [1, 2, 3])
    c.add_active_response("r", [4, 5])
    s = c.stats()
    assert s["global_tokens"] == 2  # only the response goes global
    assert s["active"] == 1 and s["cached"] == 1
    assert s["request_nodes"] == c.request_tree("r").num_nodes > 0
    assert s["total_bytes"] == s["global_bytes"] + s["request_bytes"]
    assert s["request_bytes"] == c.request_tree("r").memory_bytes


def test_closed_cache_refuses_work_and_releases_trees() -> None:
    c = make()
    c.start_request("r", [1])
    c.close()
    assert c.global_tree is None and len(c.active_requests) == 0 and len(c.cached_requests) == 0
    with pytest.raises(RuntimeError, match="closed"):
        c.start_request("s", [1])
    with pytest.raises(RuntimeError, match="closed"):
        c.speculate("r", [1])


@pytest.mark.parametrize("req_id", [1.5, True, None, ["list"]])
def test_request_ids_must_be_str_or_int(req_id) -> None:
    with pytest.raises(ValueError, match="request id must be a str or int"):
        make().start_request(req_id, [1])


@pytest.mark.parametrize("req_id", ["x", 7, ("tuple", 1)])
def test_hashable_non_float_ids_are_accepted(req_id) -> None:
    c = make()
    c.start_request(req_id, [1])
    assert req_id in c.active_requests


@pytest.mark.parametrize(
    "kw",
    [
        {"max_tree_depth": 0},
        {"max_tree_depth": True},
        {"max_tree_depth": 2.0},
        {"max_cached_requests": True},
        {"max_cached_requests": 1.0},
    ],
)
def test_bad_sizes_are_refused(kw) -> None:
    with pytest.raises(ValueError):
        make(**kw)


def test_smallest_valid_sizes_are_accepted() -> None:
    c = make(max_tree_depth=1, max_cached_requests=0)
    assert c.max_tree_depth == 1 and c.max_cached_requests == 0


def test_speculate_validates_limits() -> None:
    c = make()
    c.start_request("r", [1, 2, 1, 2])
    with pytest.raises(ValueError, match="min_token_prob"):
        c.speculate("r", [1], min_token_prob=-0.1)
    with pytest.raises(ValueError, match="max_spec_factor"):
        c.speculate("r", [1], max_spec_factor=-1)
    # Both ends of the probability range are valid.
    c.speculate("r", [1], min_token_prob=0.0)
    c.speculate("r", [1], min_token_prob=1.0)
    c.speculate("r", [1], max_spec_factor=0.0)


def test_speculate_without_a_token_limit_drafts_the_repeated_span() -> None:
    c = make(max_tree_depth=16)
    c.start_request("r", list(range(1, 9)) * 3)
    d = c.speculate("r", [7, 8, 1, 2], max_spec_factor=10.0)
    assert d.token_ids[:4] == [3, 4, 5, 6]  # what followed 7 8 1 2 every time
    assert len(d.token_ids) <= 16 and d.source == "request"


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("", None),
        ("off", None),
        ("No", None),
        (" 0 ", None),
        ("false", None),
        ("on", SlipRecovery()),
        ("TRUE", SlipRecovery()),
        ("yes", SlipRecovery()),
        ("anchor_len=6,min_anchor=2", SlipRecovery(anchor_len=6, min_anchor=2)),
        ("skips=2, weight=1", SlipRecovery(skips=(2,), weight=1.0)),
    ],
)
def test_recovery_env_values(raw, expected) -> None:
    assert SlipRecovery.from_env({"ARCTIC_INFERENCE_SUFFIX_RECOVER": raw}) == expected


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"weight": 0.0}, r"weight must be in \(0, 1\], got 0.0"),
        ({"weight": 1.01}, r"weight must be in \(0, 1\], got 1.01"),
        ({"max_tail": -1}, "need max_tail >= 0 and 1 <= min_anchor <= anchor_len"),
        ({"min_anchor": 0}, "need max_tail >= 0 and 1 <= min_anchor <= anchor_len"),
        (
            {"anchor_len": 3, "min_anchor": 4},
            "need max_tail >= 0 and 1 <= min_anchor <= anchor_len",
        ),
        ({"skips": ()}, r"skips must be a non-empty tuple of 1 and/or 2, got \(\)"),
        ({"skips": (1, 3)}, r"skips must be a non-empty tuple of 1 and/or 2, got \(1, 3\)"),
    ],
)
def test_recovery_settings_out_of_range(kw, message) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        SlipRecovery(**kw)


def test_recovery_boundary_settings_are_valid() -> None:
    r = SlipRecovery(weight=1.0, max_tail=0, anchor_len=1, min_anchor=1, skips=(1, 2))
    assert r.weight == 1.0 and r.skips == (1, 2)


def test_recovery_true_and_false() -> None:
    assert SuffixDecodingCache(recovery=True, policy=None).recovery == SlipRecovery()
    assert SuffixDecodingCache(recovery=False, policy=None).recovery is None
