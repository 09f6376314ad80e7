"""rebasekit core against real vLLM releases, fetched through rebasekit's own cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebasekit.findings import Drift
from rebasekit.load import as_index
from rebasekit.scan import scan_plugin

pytestmark = pytest.mark.network
REEXPORT = Path(__file__).parent / "fixtures" / "reexport_plugin" / "reexplug"
OWN = ("RK0", "RK1", "RK2")


@pytest.fixture(scope="module")
def indexes():
    return {v: as_index(v) for v in ("0.26.0", "0.27.0", "0.28.0")}


def test_own_plugin_clean_at_pin(indexes):
    result = scan_plugin(indexes["0.26.0"], select=OWN)
    assert result.findings == [], [f.message for f in result.findings]
    assert result.corpus.patches, "the project's plugin has patch classes to check"


@pytest.mark.parametrize("version", ["0.26.0", "0.27.0", "0.28.0"])
def test_reexports_star_and_lazy_exports_no_false_alarms(indexes, version):
    result = scan_plugin(indexes[version], plugin=REEXPORT, select=OWN)
    assert result.findings == []
    assert len(result.corpus.imports) >= 10


def test_lazy_export_resolves_to_definition(indexes):
    llm = indexes["0.26.0"].resolve("vllm.LLM")
    assert llm.qualname == "vllm.entrypoints.llm.LLM" and llm.source.startswith("class LLM")


@pytest.mark.parametrize("new", ["0.27.0", "0.28.0"])
def test_drift_runs_and_every_finding_points_at_real_code(indexes, new):
    result = scan_plugin(indexes[new], old=indexes["0.26.0"], select=OWN)
    for f in result.findings:
        assert f.drift in (Drift.NEW, Drift.PREEXISTING)
        if f.upstream is not None:
            assert indexes[new].tree.exists(f.upstream.path)


def test_unknown_version_is_bad_input():
    from cli_runner import StrictRunner as CliRunner

    from rebasekit.cli import app

    res = CliRunner().invoke(app, ["scan", "--vllm-version", "0.0.999"])
    assert res.exit_code == 2 and "no vllm wheel for version 0.0.999" in res.stderr
