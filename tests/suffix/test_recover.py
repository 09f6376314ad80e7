"""Slip-recovery drafts (``SuffixTree.recover``) against a brute-force scan,
and the cache option that uses them."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arctic_inference.suffix_decoding import _C, SlipRecovery, SuffixDecodingCache
from tests.suffix.reference import BruteTree

SETTINGS = settings(max_examples=200, deadline=None)


def brute_recover(
    bt: BruteTree,
    pattern,
    max_spec,
    factor,
    offset,
    min_prob,
    max_tail,
    anchor_len,
    min_anchor,
    skip,
):
    """The definition in suffix_tree.h, by exhaustive search."""
    n = len(pattern)
    m = bt.longest_match(pattern)
    if m > max_tail or max_spec <= 0:
        return [], [], 0
    a_end = n - m - skip
    min_anchor = max(min_anchor, 1)
    best = None
    for L in range(min(anchor_len, a_end), min_anchor - 1, -1):
        if L + skip + m >= bt.depth:
            continue
        A = pattern[a_end - L : a_end]
        W = pattern[a_end : a_end + skip]
        B = pattern[n - m :]
        # every stored path A + w + B with a continuation, w != W
        cands = {}
        for s in bt.seqs.values():
            for i in range(len(s) - (L + skip + m)):
                if s[i : i + L] == A and s[i + L + skip : i + L + skip + m] == B:
                    w = tuple(s[i + L : i + L + skip])
                    if list(w) != W:
                        cands[w] = bt.count(A + list(w) + B)
        if cands:
            w = min(cands, key=lambda k: (-cands[k], k))
            best = (L, A + list(w) + B)
            break
    if best is None:
        return [], [], 0
    L, path = best
    eff = L + skip + m
    b = bt.budget(eff, max_spec, factor, offset)
    if b <= 0:
        return [], [], 0
    toks, probs = bt.expand_path(path, b, min_prob)
    return toks, probs, eff


def with_slips(rng: random.Random, source, rate, vocab):
    """Copy `source`, substituting a token now and then (the copy then resumes)."""
    return [rng.randrange(vocab) if rng.random() < rate else t for t in source]


@SETTINGS
@given(
    seed=st.integers(0, 10**6),
    depth=st.integers(4, 20),
    vocab=st.integers(2, 8),
    src_len=st.integers(5, 60),
    rate=st.sampled_from([0.0, 0.1, 0.3]),
    cut=st.integers(1, 60),
    max_spec=st.integers(0, 10),
    factor=st.sampled_from([0.5, 1.0, 4.0]),
    prob=st.sampled_from([0.0, 0.1, 0.5]),
    max_tail=st.integers(0, 8),
    anchor=st.tuples(st.integers(1, 6), st.integers(0, 6)),
    skip=st.sampled_from([1, 2]),
    anchored=st.booleans(),
)
def test_recover_matches_brute_force(
    seed, depth, vocab, src_len, rate, cut, max_spec, factor, prob, max_tail, anchor, skip, anchored
):
    rng = random.Random(seed)
    source = [rng.randrange(vocab) for _ in range(src_len)]
    copy = with_slips(rng, source, rate, vocab)[: cut % src_len + 1]
    # Request-tree layout: one sequence = source then the (slipping) copy so far.
    ctx = source + copy
    tree = _C.SuffixTree(depth)
    bt = BruteTree(depth)
    for lo in range(0, len(ctx), 7):
        tree.extend(0, ctx[lo : lo + 7])
    bt.extend(0, ctx)
    pattern = ctx[-depth:]
    min_anchor, extra = anchor
    got = tree.recover(
        np.array(pattern, dtype=np.int64),
        max_spec,
        factor,
        0.0,
        prob,
        max_tail,
        min_anchor + extra,
        min_anchor,
        skip,
        0 if anchored else -1,
    )
    toks, probs, eff = brute_recover(
        bt, pattern, max_spec, factor, 0.0, prob, max_tail, min_anchor + extra, min_anchor, skip
    )
    assert got[0] == toks
    assert np.allclose(got[2], probs, atol=1e-6)
    assert got[1] == list(range(-1, len(toks) - 1))
    if toks:
        assert got[4] == eff
        assert abs(got[3] - sum(probs)) < 1e-4


def test_recover_resumes_after_substitution():
    src = list(range(100, 140))
    tree = _C.SuffixTree(64)
    ctx = src + src[:20] + [7] + src[21:24]  # slip at source position 20, then copying again
    tree.extend(0, ctx)
    toks, parents, probs, score, match_len = tree.recover(ctx, 8, 1.0, 0.0, 0.1, 8, 8, 4, 1, 0)
    assert toks == src[24:32]
    assert match_len == 8 + 1 + 3
    # right after the slip (no tokens copied since) it drafts from the next source position
    ctx2 = src + src[:20] + [7]
    tree2 = _C.SuffixTree(64)
    tree2.extend(0, ctx2)
    assert tree2.recover(ctx2, 4, 1.0, 0.0, 0.1, 8, 8, 4, 1, 0)[0] == src[21:25]
    # a long exact match disables it
    assert tree.recover(ctx, 8, 1.0, 0.0, 0.1, 2, 8, 4, 1, 0)[0] == []


def test_cache_option_and_env():
    src = list(range(100, 160))
    slipped = src[:30] + [7] + src[31:34]
    plain = SuffixDecodingCache(max_tree_depth=64, recovery=False)
    rec = SuffixDecodingCache(max_tree_depth=64, recovery=SlipRecovery(weight=0.5))
    for c in (plain, rec):
        c.start_request("r", src)
        c.add_active_response("r", slipped)
    ctx = np.array(src + slipped, dtype=np.int64)
    d0 = plain.speculate("r", ctx[-64:], max_spec_tokens=16)
    d1 = rec.speculate("r", ctx[-64:], max_spec_tokens=16)
    assert len(d0.token_ids) <= 3
    # effective match 8 (anchor) + 1 (slip) + 3 (copied since): vLLM's factor 1 allows 12
    assert d1.token_ids == src[34:46]
    assert d1.match_len == 12
    assert d1.score == pytest.approx(0.5 * 12)
    # src[34:46] is only in the request tree (the prompt): the draft says so.
    assert d1.source == "request"
    assert SlipRecovery.from_env({}) is None
    assert SlipRecovery.from_env({"ARCTIC_INFERENCE_SUFFIX_RECOVER": "1"}) == SlipRecovery()
    r = SlipRecovery.from_env(
        {"ARCTIC_INFERENCE_SUFFIX_RECOVER": "weight=0.3,skips=1+2,max_tail=5"}
    )
    assert r == SlipRecovery(weight=0.3, skips=(1, 2), max_tail=5)
    with pytest.raises(ValueError):
        SlipRecovery.from_env({"ARCTIC_INFERENCE_SUFFIX_RECOVER": "bogus=1"})
    with pytest.raises(ValueError):
        SlipRecovery(skips=(3,))


def test_default_cache_has_no_recovery(monkeypatch):
    monkeypatch.delenv("ARCTIC_INFERENCE_SUFFIX_RECOVER", raising=False)
    assert SuffixDecodingCache().recovery is None
    monkeypatch.setenv("ARCTIC_INFERENCE_SUFFIX_RECOVER", "1")
    assert SuffixDecodingCache().recovery == SlipRecovery()


def test_two_token_slip_is_tried_when_no_one_token_slip_explains_it():
    src = list(range(100, 160))
    slipped = src[:30] + [7, 8] + src[32:35]  # two substituted tokens, then copying again
    cache = SuffixDecodingCache(
        max_tree_depth=64, recovery=SlipRecovery(weight=0.5, skips=(1, 2)), policy=False
    )
    cache.start_request("r", src)
    cache.add_active_response("r", slipped)
    ctx = np.array(src + slipped, dtype=np.int64)
    d = cache.speculate("r", ctx[-64:], max_spec_tokens=16)
    # effective match 8 (anchor) + 2 (slip) + 3 (copied since) = 13 draft tokens at factor 1
    assert d.token_ids == src[35:48]
    assert d.match_len == 13
    assert d.score == pytest.approx(0.5 * 13)
