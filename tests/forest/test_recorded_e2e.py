"""The end-to-end forest criteria replayed on the H200 run of 2026-12-02 (no GPU).

The recorded results (bench/forest/e2e_2026-12-02.json.xz: FLASH_ATTN twice, vLLM's own
cascade, forest) are real engine outputs; replaying them keeps the GPU test's criteria and
tests/gpu/greedy_compare.py honest between GPU runs: a change that would reject this
known run, or accept a forest run that no longer equals vLLM's cascade, fails here.
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
