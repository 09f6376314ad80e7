"""The cost-aware draft policy, policy selection, exit-time release, replay."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from arctic_inference.suffix_decoding import (
    CostAwarePolicy,
    LoadAwareBackoff,
    NeverDraft,
    SuffixDecodingCache,
)
from arctic_inference.suffix_decoding.policy import policy_from_env

BENCH = Path(__file__).resolve().parents[2] / "bench" / "suffix"


def copy_prompt(rng, n=40, vocab=1000):
    doc = rng.integers(10, vocab, n).tolist()
    return doc + rng.integers(10, vocab, 8).tolist() + doc[:4], doc[4:]


def test_threshold_follows_the_cost_model():
    r = 0.02
    pol = CostAwarePolicy(token_cost=r, busy_batch_size=2)
    c = SuffixDecodingCache(max_tree_depth=32, max_cached_requests=0, policy=pol)
    rng = np.random.default_rng(0)
    prompts = [copy_prompt(rng) for _ in range(3)]
    for i, (p, _) in enumerate(prompts):
        c.start_request(i, p)
    # Nothing drafted yet: each of B requests verifies and gains one token.
    assert pol.threshold(3) == pytest.approx(r * 3 / (1 + r * 3))
    lens = []
    for i, (p, truth) in enumerate(prompts):
        c.add_active_response(i, truth[:1])
        d = c.speculate(i, (p + truth[:1])[-32:], max_spec_tokens=16)
        lens.append(len(d))
    drafted = sum(lens)
    assert drafted > 0
    assert pol.threshold(3) == pytest.approx(r * 3 / (1 + r * (3 + drafted)))
    # Accept all of request 0's draft: the batch now gains more per step.
    c.add_active_response(0, truth0 := prompts[0][1][1 : 2 + lens[0]])
    assert len(truth0) == lens[0] + 1
    assert pol.threshold(3) == pytest.approx(r * (3 + lens[0]) / (1 + r * (3 + drafted)))


def run_copy(policy, n_active, noise_bucket_fail=False, steps=30, seed=1):
    """Drive one request that copies its prompt while n_active - 1 others idle."""
    c = SuffixDecodingCache(max_tree_depth=64, max_cached_requests=0, policy=policy)
    rng = np.random.default_rng(seed)
    p, truth = copy_prompt(rng, n=120)
    c.start_request("x", p)
    for k in range(n_active - 1):
        c.start_request(f"idle{k}", rng.integers(10, 1000, 8).tolist())
    ctx = list(p)
    c.add_active_response("x", truth[:1])
    ctx.append(truth[0])
    done = 1
    lengths = []
    while done < len(truth) - 1 and len(lengths) < steps:
        d = c.speculate("x", ctx[-64:], max_spec_tokens=32, max_spec_factor=1.0)
        lengths.append((len(d), d.match_len))
        a = 0
        while a < len(d) and done + a < len(truth) and d.token_ids[a] == truth[done + a]:
            a += 1
        new = truth[done : done + a + 1]
        c.add_active_response("x", new)
        ctx += new
        done += len(new)
    return lengths


def test_lone_request_drafts_past_the_match_length_busy_batch_does_not():
    lone = run_copy(CostAwarePolicy(busy_batch_size=4, lone_spec_factor=4.0), 1)
    busy = run_copy(CostAwarePolicy(busy_batch_size=4, lone_spec_factor=4.0), 4)
    # The first draft rests on the same match in both runs.
    assert lone[0][1] == busy[0][1]
    assert lone[0][0] > busy[0][0]
    assert busy[0][0] <= busy[0][1]  # vLLM's factor 1.0: at most match_len tokens
    assert lone[0][0] <= min(32, 4 * lone[0][1])
    # Fewer steps to copy the same text alone.
    assert len(lone) < len(busy)


def test_calibration_learns_that_short_matches_fail():
    pol = CostAwarePolicy(token_cost=0.05, busy_batch_size=1, min_draft_gain=0.0, forget=0.0)
    c = SuffixDecodingCache(max_tree_depth=16, max_cached_requests=0, policy=pol)
    # Token 5 is always followed by 6 in the prompt, but the "model" never agrees.
    c.start_request("r", [5, 6, 1, 5, 6, 2, 5, 6, 3])
    key = ("request", 1)  # a one-token match, first draft token
    before = pol.factor(key)
    n_draft = []
    ctx = [5, 6, 3]
    for step in range(12):
        tok = 5 if step % 2 == 0 else 100 + step
        c.add_active_response("r", [tok])
        ctx.append(tok)
        d = c.speculate("r", ctx[-8:], max_spec_tokens=4)
        if tok == 5:
            n_draft.append(len(d))
    acc, exp = pol._calib[key]
    assert acc == 0 and exp > 0
    assert pol.factor(key) == pytest.approx(2.0 / (exp + 2.0)) and pol.factor(key) < before
    # Drafts on a one-token match stop once the learned factor times the tree's
    # probability falls below the threshold.
    assert n_draft[0] >= 1 and n_draft[-1] == 0


def test_sit_out_only_when_busy():
    pol = CostAwarePolicy(busy_batch_size=2, max_skip=4, min_draft_gain=0.0)
    c = SuffixDecodingCache(max_tree_depth=16, max_cached_requests=0, policy=pol)
    c.start_request("r", [1, 2, 3, 4, 1, 2])
    c.start_request("o", [9])
    d = c.speculate("r", [1, 2], 4)
    assert len(d) >= 1
    c.add_active_response("r", [50])  # fully rejected
    assert pol._req["r"].skip == 1
    assert c.speculate("r", [1, 2], 4).token_ids == []  # sits out one step
    assert pol._req["r"].skip == 0
    c.stop_request("o")
    assert not pol.busy(1)


def test_never_draft_and_env_selection():
    c = SuffixDecodingCache(max_tree_depth=8, policy=NeverDraft())
    c.start_request("r", [1, 2, 3, 1, 2])
    assert c.speculate("r", [1, 2], 4).token_ids == []
    assert policy_from_env({}) is None  # default: raw tree drafts
    assert isinstance(policy_from_env({"ARCTIC_INFERENCE_SUFFIX_POLICY": "cost"}), CostAwarePolicy)
    assert isinstance(
        policy_from_env({"ARCTIC_INFERENCE_SUFFIX_POLICY": "legacy"}), LoadAwareBackoff
    )
    assert isinstance(policy_from_env({"ARCTIC_INFERENCE_SUFFIX_POLICY": "nodraft"}), NeverDraft)
    assert policy_from_env({"ARCTIC_INFERENCE_SUFFIX_POLICY": "off"}) is None
    assert policy_from_env({"ARCTIC_INFERENCE_SUFFIX_BACKOFF": "0"}) is None
    p = policy_from_env(
        {
            "ARCTIC_INFERENCE_SUFFIX_POLICY": "cost",
            "ARCTIC_INFERENCE_SUFFIX_TOKEN_COST": "0.03",
            "ARCTIC_INFERENCE_SUFFIX_LONE_FACTOR": "2",
        }
    )
    assert p.token_cost == 0.03 and p.lone_spec_factor == 2.0
    with pytest.raises(ValueError):
        policy_from_env({"ARCTIC_INFERENCE_SUFFIX_POLICY": "bogus"})


def test_no_nanobind_leak_report_when_a_cache_outlives_the_interpreter():
    # A daemon thread's frame keeps the cache alive through interpreter exit,
    # as vLLM's engine objects do; before the atexit release nanobind printed
    # "leaked 2 instances" for its trees.
    code = textwrap.dedent("""
        import threading, time
        from arctic_inference.suffix_decoding import SuffixDecodingCache
        ready = threading.Event()
        def hold():
            c = SuffixDecodingCache()
            c.start_request("a", [1, 2, 3])
            c.add_active_response("a", [4])
            ready.set()
            time.sleep(60)
        threading.Thread(target=hold, daemon=True).start()
        ready.wait()
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "leaked" not in r.stderr, r.stderr


def test_closed_cache_refuses_work():
    c = SuffixDecodingCache()
    c.start_request("a", [1, 2])
    c.close()
    with pytest.raises(RuntimeError):
        c.start_request("b", [1])
    with pytest.raises(RuntimeError):
        c.speculate("a", [1, 2])


def test_replay_of_a_record_counts_steps_consistently():
    sys.path.insert(0, str(BENCH))
    try:
        from costmodel import StepCost
        from replay import parse_policy, replay_record
        from workloads import copy_record
    finally:
        sys.path.pop(0)
    rec = copy_record(single=2, batch=4, resp_len=64)
    rows = replay_record(
        rec, [parse_policy("cost"), parse_policy("nodraft")], 64, 32, 100, StepCost()
    )
    by = {(r["policy"], r["phase"]): r for r in rows}
    assert len(rows) == 6
    for (pol, ph), r in by.items():
        n_req = len(rec["phases"][ph]["prompts"])
        generated = sum(len(o) for o in rec["phases"][ph]["outputs"]["none"])
        assert r["accepted"] <= r["drafted"]
        # Every generated token is either accepted from a draft or one per request-step.
        assert r["accepted"] + r["speculate_calls"] + n_req == generated
        if pol == "nodraft":
            assert r["drafted"] == 0 and r["steps"] == r["base_steps"]
    assert by[("cost", "a_single")]["steps"] < by[("nodraft", "a_single")]["steps"]
    # Phase (c) repeats (b): the global tree makes it take fewer steps.
    assert by[("cost", "c_batch_again")]["steps"] < by[("cost", "b_batch_first")]["steps"]
