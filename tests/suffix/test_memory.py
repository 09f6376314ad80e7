"""Memory stays bounded over many requests and is released on removal."""

from __future__ import annotations

import numpy as np

from arctic_inference.suffix_decoding import SuffixDecodingCache


def test_memory_flat_over_100k_requests():
    depth, limit, resp_len = 8, 500, 12
    cache = SuffixDecodingCache(max_tree_depth=depth, max_cached_requests=limit)
    rng = np.random.default_rng(0)
    vocab = rng.integers(0, 5000, size=(100_000, 24))
    samples = {}
    for i in range(100_000):
        rid = f"req-{i}"
        row = vocab[i]
        cache.start_request(rid, row[:8])
        cache.add_active_response(rid, row[8:20])
        cache.speculate(rid, row[12:20], 8)
        cache.stop_request(rid)
        if i + 1 in (10_000, 50_000, 100_000):
            samples[i + 1] = cache.stats()
    for s in samples.values():
        assert s["cached"] == limit and s["active"] == 0 and s["request_bytes"] == 0
        # Nodes are bounded by stored tokens x depth (+ root).
        assert s["global_tokens"] == limit * resp_len
        assert s["global_nodes"] <= 1 + s["global_tokens"] * depth
    # Once the cache is full the footprint stops growing.
    assert samples[100_000]["global_bytes"] <= samples[10_000]["global_bytes"] * 1.05
    assert cache.global_tree.check_invariants() == ""
    for rid in list(cache.cached_requests):
        cache.evict_cached_response(rid)
    assert cache.stats()["global_nodes"] == 1
    assert cache.stats()["global_bytes"] < 4096


def test_request_tree_memory_is_released_on_stop():
    cache = SuffixDecodingCache(max_tree_depth=32, max_cached_requests=0)
    cache.start_request("a", np.arange(5000) % 977)
    assert cache.stats()["request_bytes"] > 5000 * 4
    cache.stop_request("a")
    assert cache.stats()["request_bytes"] == 0 and cache.stats()["total_bytes"] < 4096
