"""One real plugin from the package registry, scanned at the vLLM release it pins.

arctic-inference 0.0.9 (its sdist) against vLLM 0.9.2 (its wheel), both fetched once
into caches outside the repository (``bench/realplugins/fetch.py``). The scan must finish
as a scan: an exit code for findings, not a crash, and no more error findings than the
baseline recorded in ``bench/realplugins/RESULTS.md``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_runner import invoke

from rebasekit.cli import app

pytestmark = pytest.mark.network
sys.path.insert(0, str(Path(__file__).parents[2] / "bench" / "realplugins"))

BASELINE_ERRORS = 24  # scan --patch-base ArcticPatch at 0.9.2 before the fixes (RESULTS.md)


@pytest.fixture(scope="module")
def release():
    import fetch

    src = fetch.sdist("arctic-inference", "0.0.9")
    pin = fetch.read_pin(src)
    return src, pin, fetch.vllm_tree(pin)


def test_pin_is_read_from_the_sdist(release):
    _, pin, _ = release
    assert pin == "0.9.2"


def test_scan_at_its_own_pin_finishes_with_at_most_the_baseline_errors(release, monkeypatch):
    src, _, tree = release
    monkeypatch.chdir(src)
    args = ["scan", "--plugin", src / "arctic_inference", "--vllm", tree]
    res = invoke(app, [*args, "--patch-base", "ArcticPatch", "--json", "--allow-incomplete"])
    assert res.exit_code in (0, 1), res.output
    report = json.loads(res.stdout)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert len(errors) <= BASELINE_ERRORS, [f"{f['code']} {f['message']}" for f in errors]
    assert "Traceback" not in res.output


@pytest.fixture(scope="module")
def smallest_pair():
    import fetch

    old, new = fetch.sdist("arctic-inference", "0.1.0"), fetch.sdist("arctic-inference", "0.1.1")
    return old, fetch.vllm_tree(fetch.read_pin(old)), fetch.vllm_tree(fetch.read_pin(new))


def test_recall_matcher_runs_on_the_smallest_pair(smallest_pair, monkeypatch):
    import recall

    src, old_tree, new_tree = smallest_pair
    monkeypatch.chdir(src)
    args = ["scan", "--plugin", src / "arctic_inference", "--from", old_tree, "--to", new_tree]
    res = invoke(app, [*args, "--patch-base", "ArcticPatch", "--json"])
    assert res.exit_code in (0, 1), res.output
    report = json.loads(res.stdout)
    fixes = recall.load_fixes()
    result = recall.match_pair("0.1.0->0.1.1", "--patch-base", fixes, report, res.exit_code)
    expected = [f for f in fixes if f.pair == "0.1.0->0.1.1"]
    assert result.fixes == len(expected)
    assert len(result.named) + len(result.generic) + len(result.missed) == result.fixes
    new = [f for f in report["findings"] if f["drift"] == "new"]
    assert result.new_findings == len(new)
    assert len(result.unmatched) <= result.new_findings
    assert "| 0.1.0->0.1.1 | --patch-base |" in recall.table([result])


def test_unconfigured_scan_discovers_every_patch_class(release, monkeypatch):
    """No --plugin, no --patch-base: the entry point names the package, discovery the patches.

    The expected count is read from the source with a plain text search, not from rebasekit.
    """
    import re

    src, _, tree = release
    pattern = re.compile(r"^\s*class \w+\(ArcticPatch\[", re.M)
    expected = sum(
        len(pattern.findall(p.read_text(encoding="utf-8")))
        for p in (src / "arctic_inference").rglob("*.py")
        if p.name != "patching.py"  # its docstring shows the syntax in examples
    )
    monkeypatch.chdir(src)
    res = invoke(app, ["scan", "--vllm", tree, "--json"])
    assert res.exit_code in (0, 1), res.output
    report = json.loads(res.stdout)
    assert report["complete"], report["degradations"]
    assert expected >= 18
    assert report["summary"]["patches"]["by_rule"]["generic-base"] == expected
