"""The native suffix tree against the brute-force reference."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arctic_inference.suffix_decoding import _C

from .reference import BruteTree

SETTINGS = settings(max_examples=60, deadline=None)

small_seqs = st.lists(st.lists(st.integers(0, 3), min_size=0, max_size=30), min_size=1, max_size=4)


def build(depth: int, seqs: list[list[int]]):
    tree, ref = _C.SuffixTree(depth), BruteTree(depth)
    for i, s in enumerate(seqs):
        # Feed in uneven chunks to exercise incremental appends.
        for lo in range(0, len(s), 7):
            tree.extend(i, s[lo : lo + 7])
            ref.extend(i, s[lo : lo + 7])
        if not s:
            tree.extend(i, [])
            ref.extend(i, [])
    return tree, ref


def assert_same(tree, ref: BruteTree, alphabet: range) -> None:
    assert tree.check_invariants() == ""
    assert tree.num_tokens == ref.count([])
    for n in range(1, ref.depth + 1):
        for path in itertools.product(alphabet, repeat=min(n, 3)):
            path = list(path)
            assert tree.count(path) == ref.count(path), path
            assert dict(tree.continuations(path)) == ref.continuations(path), path


@SETTINGS
@given(depth=st.integers(1, 6), seqs=small_seqs, data=st.data())
def test_counts_match_reference_after_appends_and_removals(depth, seqs, data):
    tree, ref = build(depth, seqs)
    assert_same(tree, ref, range(4))
    doomed = data.draw(st.sets(st.integers(0, len(seqs) - 1)))
    for i in doomed:
        assert tree.remove(i) and ref.remove(i)
    assert not tree.remove(99)
    assert_same(tree, ref, range(4))
    # Deep paths of real substrings, beyond the 3-token brute loops above.
    for s in ref.seqs.values():
        for i in range(len(s)):
            path = s[i : i + depth]
            assert tree.count(path) == ref.count(path)


@SETTINGS
@given(
    depth=st.integers(1, 8),
    seqs=small_seqs,
    pattern=st.lists(st.integers(0, 3), min_size=0, max_size=12),
    max_spec=st.integers(0, 10),
    factor=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    offset=st.sampled_from([0.0, 1.0, 3.0]),
    min_prob=st.sampled_from([0.0, 0.13, 0.37]),
)
def test_speculate_matches_reference(depth, seqs, pattern, max_spec, factor, offset, min_prob):
    tree, ref = build(depth, seqs)
    assert tree.longest_match(pattern) == ref.longest_match(pattern)
    cands = ref.candidates(pattern, max_spec, factor, offset)
    for use_tree in (False, True):
        toks, parents, probs, score, match_len = tree.speculate(
            pattern, max_spec, factor, offset, min_prob, use_tree
        )
        assert abs(score - sum(probs)) < 1e-4
        assert len(toks) == len(parents) == len(probs)
        assert all(-1 <= p < i for i, p in enumerate(parents))
        # Reference drafts for every candidate match length.
        ref_drafts = {}
        for L in cands:
            ctx = pattern[len(pattern) - L :]
            b = ref.budget(L, max_spec, factor, offset)
            if use_tree:
                ref_drafts[L] = (None, ref.expand_tree(ctx, b, min_prob))
            else:
                ref_drafts[L] = ref.expand_path(ctx, b, min_prob)
        best_ref = max((sum(p) for _, p in ref_drafts.values()), default=0.0)
        assert abs(score - best_ref) < 1e-4
        if not toks:
            assert best_ref == 0.0
            continue
        assert match_len in ref_drafts
        ref_toks, ref_probs = ref_drafts[match_len]
        assert np.allclose(sorted(probs), sorted(ref_probs), atol=1e-5)
        if not use_tree:
            assert toks == ref_toks
            assert parents == list(range(-1, len(toks) - 1))


@pytest.mark.parametrize(
    "seq",
    [
        [7] * 200,  # one long run: deepest chains, maximal sharing
        [1, 2] * 100,  # period two
        list(range(150)),  # no repetition: maximal node count
        [2**31 - 1, 0] * 40,  # extreme ids
        [0, 1, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0] * 4,  # Fibonacci-like word
    ],
)
@pytest.mark.parametrize("depth", [1, 5, 16])
def test_adversarial_sequences(seq, depth):
    tree, ref = build(depth, [seq, seq[::-1]])
    assert tree.check_invariants() == ""
    assert tree.num_nodes <= 1 + tree.num_tokens * depth
    for i in range(0, len(seq), 9):
        path = seq[i : i + depth]
        assert tree.count(path) == ref.count(path)
        assert dict(tree.continuations(path[:-1])) == ref.continuations(path[:-1])
    pattern = seq[-20:]
    assert tree.longest_match(pattern) == ref.longest_match(pattern)
    tree.remove(0)
    tree.remove(1)
    assert tree.num_nodes == 1 and tree.num_tokens == 0 and tree.check_invariants() == ""


def test_numpy_inputs_of_any_int_dtype_and_strides():
    tree = _C.SuffixTree(4)
    base = np.arange(20, dtype=np.int64).reshape(4, 5)
    tree.extend(0, base[1, 1:4])  # contiguous slice of a row: the proposer's case
    tree.extend(1, base[:, 2])  # strided column
    for dt in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.uint64):
        tree.extend(2, np.array([3, 4], dtype=dt))
    assert tree.count([6, 7, 8]) == 1
    assert tree.count([2, 7, 12, 17]) == 1
    assert tree.count([3, 4, 3, 4]) == 6
    assert tree.longest_match(np.array([9, 6, 7], dtype=np.int32)) == 2


@pytest.mark.parametrize(
    "bad",
    [
        [1, -1],
        [1.5],
        ["a"],
        [True],
        [2**31],
        [2**70],
        "abc",
        None,
        np.array([1.0, 2.0]),
        np.array([-3], dtype=np.int64),
        np.zeros((2, 2), dtype=np.int64),
        np.array([2**32], dtype=np.uint64),
    ],
)
def test_bad_tokens_raise_value_error_and_change_nothing(bad):
    tree = _C.SuffixTree(4)
    tree.extend(0, [1, 2, 3])
    with pytest.raises(ValueError):
        tree.extend(0, bad)
    with pytest.raises(ValueError):
        tree.speculate(bad, 4, 1.0, 0.0, 0.1, False)
    assert tree.num_tokens == 3 and tree.check_invariants() == ""


def test_bad_depth():
    for d in (0, -1, 5000):
        with pytest.raises(ValueError):
            _C.SuffixTree(d)
