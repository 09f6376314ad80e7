"""Matching through a sequence's frontier (``speculate(..., seq_id)``) must give
exactly the draft of matching by walks from the root, whatever the pattern."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from arctic_inference.suffix_decoding import _C, SuffixDecodingCache

SETTINGS = settings(max_examples=150, deadline=None)


def drafts_equal(a, b) -> bool:
    return (
        a[0] == b[0]
        and a[1] == b[1]
        and np.allclose(a[2], b[2])
        and abs(a[3] - b[3]) < 1e-5
        and a[4] == b[4]
    )


@SETTINGS
@given(
    depth=st.integers(2, 12),
    seqs=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=40), min_size=1, max_size=4),
    owner=st.integers(0, 5),
    tail_edit=st.integers(0, 3),
    cut=st.integers(0, 20),
    num_spec=st.integers(1, 10),
    factor=st.sampled_from([0.5, 1.0, 4.0]),
    prob=st.sampled_from([0.0, 0.1, 0.5]),
    use_tree=st.booleans(),
    removed=st.booleans(),
)
def test_anchored_speculate_equals_plain(
    depth, seqs, owner, tail_edit, cut, num_spec, factor, prob, use_tree, removed
):
    tree = _C.SuffixTree(depth)
    for i, s in enumerate(seqs):
        for lo in range(0, len(s), 5):
            tree.extend(i, s[lo : lo + 5])
    if removed and len(seqs) > 1:
        tree.remove(len(seqs) - 1)
    base = seqs[owner % len(seqs)]
    # The pattern: the owner's tail, sometimes preceded by other tokens (vLLM's
    # pattern starts in the prompt, the global sequence holds only the
    # response) or with its last tokens changed (no longer the owner's tail).
    pattern = [3, 1, 2][: cut % 4] + base[max(0, len(base) - depth - cut) :]
    if tail_edit and pattern:
        pattern = pattern[:-tail_edit] + [(pattern[-1] + 1) % 4] * min(tail_edit, len(pattern))
    args = (num_spec, factor, 0.0, prob, use_tree)
    plain = tree.speculate(pattern, *args)
    for seq_id in (owner % len(seqs), owner, 99, -1):
        assert drafts_equal(tree.speculate(pattern, *args, seq_id), plain), seq_id
    assert tree.speculate(pattern, *args, seq_id=owner % len(seqs)) == tree.speculate(
        pattern, *args, owner % len(seqs)
    )


@SETTINGS
@given(
    prompts=st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=30), min_size=1, max_size=3),
    outputs=st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=30), min_size=3, max_size=3),
    chunk=st.integers(1, 6),
)
def test_cache_drafts_match_unanchored_trees(prompts, outputs, chunk):
    """The cache (which anchors on the request's sequences) drafts what plain walks draft."""
    depth = 8
    cache = SuffixDecodingCache(max_tree_depth=depth, max_cached_requests=2, policy=None)
    for r, prompt in enumerate(prompts):
        rid = f"r{r}"
        cache.start_request(rid, np.array(prompt, dtype=np.int64))
        ctx = list(prompt)
        resp = outputs[r]
        for lo in range(0, len(resp), chunk):
            new = resp[lo : lo + chunk]
            cache.add_active_response(rid, new)
            ctx += new
            pattern = np.array(ctx[-depth:], dtype=np.int64)
            got = cache.speculate(rid, pattern, 5, 1.0, 0.0, 0.1)
            args = (5, 1.0, 0.0, 0.1, False)
            local = cache.request_tree(rid).speculate(pattern, *args)
            best = local
            if cache.global_tree.num_tokens:
                shared = cache.global_tree.speculate(pattern, *args)
                best = shared if shared[3] > local[3] else local
            assert got.token_ids == best[0] and got.match_len == best[4]
        cache.stop_request(rid)
