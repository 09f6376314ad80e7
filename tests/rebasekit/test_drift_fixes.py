"""The drift-fix ground truth parses, and the recall matcher sorts findings as documented.

Findings here are written by hand in the shape of SCHEMA.md (plugin/upstream/identity/
details), so each verdict is checked against the matching rule, not against the matcher.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench" / "realplugins"))
import recall  # noqa: E402

RUNNER = "vllm.v1.worker.gpu_model_runner.GPUModelRunner"
FILE = "arctic_inference/vllm/model_runner.py"


def _fix(**over) -> recall.Fix:
    base = dict(
        pair="0.1.1->0.1.2",
        file=FILE,
        symbol="GPUModelRunnerPatch.execute_model",
        follows=f"{RUNNER}.execute_model",
        kind="attribute-kind-changed",
        upstream=RUNNER,
        member="input_ids",
        evidence="a CpuGpuBuffer now",
    )
    return recall.Fix(**{**base, **over})


def _finding(code="RK304", symbol="GPUModelRunnerPatch.execute_model", drift="new", **extra):
    return {
        "code": code,
        "severity": extra.pop("severity", "warning"),
        "message": "m",
        "drift": drift,
        "plugin": {"path": FILE, "line": 1, "column": 0, "symbol": symbol},
        "upstream": {"path": "vllm/x.py", "line": 1, "column": 0, "symbol": extra.pop("up", None)},
        "identity": extra.pop("identity", {}),
        "details": extra.pop("details", {}),
    }


def test_the_fix_list_parses_with_known_kinds_and_pairs():
    fixes = recall.load_fixes()
    pairs = {f.pair for f in fixes}
    assert pairs == {"0.0.9->0.1.0", "0.1.1->0.1.2"}  # 0.1.0 -> 0.1.1 shares vLLM 0.10.1
    assert {f.kind for f in fixes} <= set(recall.KINDS)
    assert all(f.evidence and f.file.startswith("arctic_inference/") for f in fixes)
    labels = [(f.pair, f.file, f.symbol, f.key) for f in fixes]
    assert len(labels) == len(set(labels)), "a fix is listed twice"


def test_a_fix_list_with_an_unknown_field_is_refused(tmp_path):
    bad = tmp_path / "fixes.toml"
    bad.write_text(
        '[[fix]]\npair = "0.0.9->0.1.0"\nfile = "f"\nsymbol = "s"\nfollows = "u"\n'
        'kind = "return-shape"\nupstream = "u"\nevidence = "e"\nwhy = "x"\n'
    )
    with pytest.raises(SystemExit, match="unknown fields \\['why'\\]"):
        recall.load_fixes(bad)


def test_an_attribute_finding_on_the_changed_attribute_names_the_fix():
    found = _finding(
        up=f"{RUNNER}.input_ids", identity={"target": RUNNER, "attribute": "input_ids"}
    )
    assert recall.verdict(_fix(), found) == "named"


def test_an_attribute_finding_on_another_attribute_or_symbol_does_not():
    other_attr = _finding(identity={"target": RUNNER, "attribute": "positions"})
    other_place = _finding(
        symbol="GPUModelRunnerPatch.load_model",
        identity={"target": RUNNER, "attribute": "input_ids"},
    )
    assert recall.verdict(_fix(), other_attr) is None
    assert recall.verdict(_fix(), other_place) is None


def test_a_preexisting_finding_never_counts():
    old = _finding(drift="preexisting", identity={"target": RUNNER, "attribute": "input_ids"})
    assert recall.verdict(_fix(), old) is None


def test_body_changed_is_generic_for_an_attribute_fix_and_named_for_a_body_report():
    body = _finding(code="RK402", up=f"{RUNNER}.execute_model")
    assert recall.verdict(_fix(), body) == "generic"
    report = _fix(kind="body-report", upstream=f"{RUNNER}.execute_model", member=None)
    assert recall.verdict(report, body) == "named"


def test_signature_findings_match_on_function_and_parameter():
    fix = _fix(
        symbol="GPUModelRunnerPatch.load_model",
        kind="signature-param-added",
        upstream=f"{RUNNER}.load_model",
        member="eep_scale_up",
    )
    right = _finding(
        code="RK210",
        symbol="GPUModelRunnerPatch.load_model",
        up=f"{RUNNER}.load_model",
        identity={"attr": "load_model", "param": "eep_scale_up"},
    )
    wrong = _finding(
        code="RK210",
        symbol="GPUModelRunnerPatch.load_model",
        up=f"{RUNNER}.load_model",
        identity={"attr": "load_model", "param": "other"},
    )
    assert recall.verdict(fix, right) == "named"
    assert recall.verdict(fix, wrong) is None


def test_a_module_level_import_finding_matches_a_module_fix_by_its_module():
    fix = _fix(
        file="arctic_inference/vllm/ulysses.py",
        symbol="<module>",
        kind="import-module-removed",
        upstream="vllm.executor.multiproc_worker_utils",
        member=None,
    )
    found = _finding(
        code="RK101",
        symbol=None,
        identity={"target": "vllm.executor.multiproc_worker_utils.set_multiprocessing_worker_envs"},
        details={"module": "vllm.executor.multiproc_worker_utils"},
    )
    found["plugin"]["path"] = "arctic_inference/vllm/ulysses.py"
    assert recall.verdict(fix, found) == "named"


def test_match_pair_counts_named_generic_missed_and_unmatched():
    named = _fix()
    generic = _fix(member="positions")
    missed = _fix(symbol="GPUModelRunnerPatch.profile_run")
    report = {
        "complete": True,
        "findings": [
            _finding(identity={"target": RUNNER, "attribute": "input_ids"}),
            _finding(code="RK402", up=f"{RUNNER}.execute_model", severity="info"),
            _finding(
                code="RK303", symbol="Elsewhere.m", identity={"target": RUNNER, "attribute": "z"}
            ),
            _finding(code="RK303", symbol="Elsewhere.n", drift="preexisting"),
        ],
    }
    result = recall.match_pair("0.1.1->0.1.2", "--patch-base", [named, generic, missed], report, 1)
    assert (result.fixes, len(result.named), len(result.generic), len(result.missed)) == (
        3,
        1,
        1,
        1,
    )
    assert result.missed[0]["kind"] == "attribute-kind-changed"
    assert result.new_findings == 3
    assert len(result.unmatched) == 1 and "Elsewhere.m" in result.unmatched[0]
    assert result.unmatched_info == 0
    assert result.recall == pytest.approx(1 / 3)


def test_put_section_replaces_only_between_the_markers(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(f"head\n{recall.START}\nold\n{recall.END}\ntail\n")
    assert recall.put_section(doc, "new")
    assert doc.read_text() == f"head\n{recall.START}\nnew\n{recall.END}\ntail\n"
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    assert not recall.put_section(plain, "new")
    assert plain.read_text() == "no markers\n"
