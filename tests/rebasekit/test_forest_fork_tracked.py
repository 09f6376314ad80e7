"""The Forest Cascade Attention fork is tracked: RK403 when upstream FlashAttention moves."""

from __future__ import annotations

from pathlib import Path

import pytest

import arctic_inference
from rebasekit.load import as_index
from rebasekit.scan import scan_plugin

pytestmark = pytest.mark.network
PLUGIN = Path(arctic_inference.__file__).parent
FORK = "arctic_inference/vllm/attention/flash_attn_fork.py"


@pytest.fixture(scope="module")
def indexes():
    return {v: as_index(v) for v in ("0.26.0", "0.27.0")}


def _fork_findings(result):
    return [f for f in result.findings if f.code == "RK403" and f.plugin.path.endswith(FORK)]


def test_upstream_drift_of_the_forked_backend_is_reported(indexes):
    result = scan_plugin(indexes["0.27.0"], old=indexes["0.26.0"], plugin=PLUGIN, select=["RK403"])
    [finding] = _fork_findings(result)
    changed = {c["qualname"]: c for c in finding.details["changes"]}
    # vLLM 0.27.0 changed FlashAttentionImpl.__init__, which the fork carries.
    assert changed["FlashAttentionImpl.__init__"]["forked"] is True
    assert "vllm/v1/attention/backends/flash_attn.py@0.26.0" in finding.message
    assert "rebasekit port --to 0.27.0" in finding.suggestion


def test_the_fork_is_quiet_at_its_own_pin(indexes):
    result = scan_plugin(
        indexes["0.26.0"], old=indexes["0.26.0"], plugin=PLUGIN, select=["RK403", "RK404"]
    )
    assert _fork_findings(result) == []
    assert not [f for f in result.findings if f.code == "RK404" and f.plugin.path.endswith(FORK)]
