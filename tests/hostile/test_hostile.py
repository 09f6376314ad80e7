"""Replay every hostile-input case against the real CLI process (see corpus.py)."""

from __future__ import annotations

import pytest
from corpus import Case, all_cases, run_case

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_keeps_the_contract(case: Case, tmp_path):
    outcome = run_case(case, tmp_path)
    assert not outcome.problems(), (
        f"{case.name}: " + "; ".join(outcome.problems()) + "\n" + outcome.output
    )
