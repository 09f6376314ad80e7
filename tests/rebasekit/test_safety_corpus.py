"""Replay the hostile cases of tests/hostile/cases_safety.py through the CLI.

Each case must end with its exit code and message, never with a crash or a traceback,
leave the listed files byte-identical and create none of the listed paths.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

from safety_helpers import cli

_SPEC = importlib.util.spec_from_file_location(
    "cases_safety", Path(__file__).resolve().parents[1] / "hostile" / "cases_safety.py")
cases_safety = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cases_safety)

def _params():
    for case in cases_safety.CASES:
        yield pytest.param(case, id=case["name"])


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("case", list(_params()))
def test_hostile_case(case, tmp_path, monkeypatch):
    context = case["setup"](tmp_path)
    for key, value in context.get("env", {}).items():
        monkeypatch.setenv(key, value.replace("{tmp}", str(tmp_path)))
    before = {rel: _digest(tmp_path / rel) for rel in case["unchanged"]}
    res = cli(*[arg.replace("{tmp}", str(tmp_path)) for arg in case["argv"]])
    assert "Traceback" not in res.output
    assert res.exit_code == case["exit_code"], res.output
    assert case["message"] in res.output
    assert {rel: _digest(tmp_path / rel) for rel in case["unchanged"]} == before
    assert [rel for rel in case.get("absent", []) if (tmp_path / rel).exists()] == []
