"""No two features replace the same upstream attribute unless they can never be on together.

Each patch captures the upstream original (``_orig_<name>``) when its module is imported
and calls that, so when two patches replace one attribute the one applied later
silently drops the other's behaviour. A new overlap must either chain the two or be
refused together by config validation; this test fails on any overlap not listed here.
"""

from __future__ import annotations

import collections
import pkgutil

import pytest

pytestmark = pytest.mark.vllm

from arctic_inference.patching import _target_name  # noqa: E402
from arctic_inference.vllm import patch_set  # noqa: E402

# Overlap -> the features that share it, each pair refused together (test named there).
REFUSED_TOGETHER = {
    ("vllm.v1.worker.gpu_model_runner.GPUModelRunner", "_determine_batch_execution_and_padding"): {
        "forest-cascade-attn",  # tests/ulysses/test_validate.py::
        "ulysses-worker",  # test_forest_attention_with_sp_is_refused_naming_both_flags
    },
}


def _overlaps() -> dict[tuple[str, str], set[str]]:
    owners: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    for feature in patch_set.ENGINE_FEATURES + patch_set.WORKER_FEATURES:
        for path in feature.patches:
            patch = pkgutil.resolve_name(path)
            name = _target_name(patch.target())  # the name a PatchRecord keeps
            for attribute in patch.patch_attributes():
                owners[name, attribute].add(feature.name)
    return {key: names for key, names in owners.items() if len(names) > 1}


def test_every_attribute_two_features_replace_is_a_pair_refused_together():
    assert _overlaps() == REFUSED_TOGETHER
