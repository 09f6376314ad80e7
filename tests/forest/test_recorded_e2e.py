"""The end-to-end forest criteria replayed on recorded H200 runs (no GPU).

The recorded results are real engine outputs:
- bench/forest/e2e_2026-12-02.json.xz: FLASH_ATTN twice, vLLM's own cascade, forest;
- bench/forest/e2e-full-graphs_2026-12-03e.json.xz: the same four, plus FLASH_ATTN in
  ``FULL_AND_PIECEWISE`` graphs and forest's static plans in full graphs.
Replaying them keeps the GPU test's criteria and tests/gpu/greedy_compare.py honest
between GPU runs: a change that would reject a known-good run, or accept a forest run
that no longer equals vLLM's cascade or that leaves FLASH_ATTN at a wider tie than
vLLM's cascade does, fails here.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import lzma
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "bench" / "forest" / "e2e_2026-12-02.json.xz"
FULL_GRAPHS_RECORD = ROOT / "bench" / "forest" / "e2e-full-graphs_2026-12-03e.json.xz"


@pytest.fixture(scope="module")
def gpu_tests():
    spec = importlib.util.spec_from_file_location(
        "forest_gpu_tests", ROOT / "tests" / "gpu" / "test_forest_gpu.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs() -> dict:
    return json.loads(lzma.decompress(RECORD.read_bytes()))


@pytest.fixture(scope="module")
def full_graph_runs() -> dict:
    return json.loads(lzma.decompress(FULL_GRAPHS_RECORD.read_bytes()))


def _args(runs):
    return (runs["upstream-a"], runs["upstream-b"]), runs["forest"], runs["vllm-cascade"]


def test_recorded_run_meets_both_end_to_end_criteria(gpu_tests, runs):
    upstream, forest, cascade = _args(runs)
    gpu_tests.test_one_prefix_group_is_vllms_own_cascade_bit_for_bit(upstream, forest, cascade)
    gpu_tests.test_greedy_rollouts_match_flash_attn_or_diverge_no_more_than_vllms_cascade(
        upstream, forest, cascade
    )


def test_a_forest_run_off_by_one_token_from_vllms_cascade_is_caught(gpu_tests, runs):
    upstream, forest, cascade = _args(runs)
    broken = copy.deepcopy(forest)
    broken["one_prefix"]["outputs"][0][-1] += 1
    with pytest.raises(AssertionError):
        gpu_tests.test_one_prefix_group_is_vllms_own_cascade_bit_for_bit(upstream, broken, cascade)


def test_a_rollout_leaving_flash_attn_at_a_wide_gap_is_caught(gpu_tests, runs):
    """Replace one identical rollout's first token by FLASH_ATTN's least likely top-5 token."""
    upstream, forest, cascade = _args(runs)
    broken = copy.deepcopy(forest)
    rollouts, reference = broken["rollouts"], upstream[0]["rollouts"]
    same = next(
        i for i, (a, b) in enumerate(zip(reference["outputs"], rollouts["outputs"])) if a == b
    )
    top = reference["top"][same][0]
    worst = min(top, key=top.get)
    rollouts["outputs"][same] = [int(worst)] + rollouts["outputs"][same][1:]
    with pytest.raises(AssertionError):
        gpu_tests.test_greedy_rollouts_match_flash_attn_or_diverge_no_more_than_vllms_cascade(
            upstream, broken, cascade
        )


def test_recorded_full_graph_run_meets_the_criteria_for_piecewise_forest(
    gpu_tests, full_graph_runs
):
    """The second recorded run's piecewise forest passes both criteria, as on the device."""
    upstream, forest, cascade = _args(full_graph_runs)
    gpu_tests.test_one_prefix_group_is_vllms_own_cascade_bit_for_bit(upstream, forest, cascade)
    gpu_tests.test_greedy_rollouts_match_flash_attn_or_diverge_no_more_than_vllms_cascade(
        upstream, forest, cascade
    )


def test_flash_attn_in_full_graphs_is_bit_for_bit_its_piecewise_self(full_graph_runs):
    """The recorded evidence that graph mode alone moves nothing here: FLASH_ATTN's ids and
    logprobs in full decode graphs equal its piecewise ones on both workloads, so what
    forest's static plans change is theirs (the reason ``full_cuda_graphs`` stays
    experimental, README and bench/forest/RESULTS.md)."""
    piecewise, full = full_graph_runs["upstream-a"], full_graph_runs["upstream-full-graphs"]
    assert full["config"] == piecewise["config"] == "flash"
    for workload in ("rollouts", "one_prefix"):
        assert full[workload]["outputs"] == piecewise[workload]["outputs"], workload
        assert full[workload]["logprobs"] == piecewise[workload]["logprobs"], workload


def test_recorded_static_plans_fail_the_tie_rule(gpu_tests, full_graph_runs):
    """Forest's static plans in full graphs left FLASH_ATTN (same graph mode) at a first
    divergence wider than any vLLM's cascade makes (gap 1.75 against 1.5): the rule of
    the GPU test rejects the run. A loosened rule or comparison would accept it."""
    greedy_compare = gpu_tests.greedy_compare
    upstream, _, cascade = _args(full_graph_runs)
    static = full_graph_runs["forest-static-full"]["rollouts"]
    assert static["forest_stats"]["static_full_grouped"] > 0  # the static path really ran
    comparison = greedy_compare.compare(full_graph_runs["upstream-full-graphs"]["rollouts"], static)
    baseline = greedy_compare.compare(upstream[0]["one_prefix"], cascade["one_prefix"])
    assert max(comparison.gaps()) > max(baseline.gaps())
    with pytest.raises(AssertionError):
        gpu_tests._assert_within_the_cascade_tie_rule(
            comparison, gpu_tests._share(upstream[0]["rollouts"], upstream[1]["rollouts"]), baseline
        )
