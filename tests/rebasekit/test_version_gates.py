"""Version gates read from ``if`` tests: the specifier of each branch, and whether it runs."""

from __future__ import annotations

import ast

import pytest

from rebasekit.corpus.version_gates import combine, gate, runs_at


def _gate(source: str):
    return gate(ast.parse(source, mode="eval").body)


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ('vllm_version_is("0.18.0")', ("==0.18.0", "!=0.18.0")),
        ('utils.vllm_version_is("0.18.0")', ("==0.18.0", "!=0.18.0")),
        ('not vllm_version_is("0.18.0")', ("!=0.18.0", "==0.18.0")),
        ('Version(vllm.__version__) < Version("0.19.0")', ("<0.19.0", ">=0.19.0")),
        ('vllm.__version__ >= "0.10.1"', (">=0.10.1", "<0.10.1")),
        ('Version("0.19.0") > Version(vllm.__version__)', ("<0.19.0", ">=0.19.0")),
    ],
)
def test_gates_that_are_read(test, expected):
    assert _gate(test) == expected


@pytest.mark.parametrize(
    "test",
    [
        'vllm_version_is("0.18.0") and flag',
        "vllm_version_is(name)",
        "other.__len__ < 3",
        'Version(vllm.__version__) < Version("not a version")',
        "flag",
    ],
)
def test_tests_that_are_not_gates(test):
    assert _gate(test) is None


def test_runs_at():
    assert runs_at("==0.23.0", "0.23.0") and not runs_at("!=0.23.0", "0.23.0")
    assert runs_at(combine(">=0.18.0", "<0.19.0"), "0.18.1")
    assert not runs_at(combine(">=0.18.0", "<0.19.0"), "0.19.0")
    assert runs_at(None, "0.1.0") and runs_at("==0.1.0", None)
    assert runs_at("<0.19.0", "0.19.0rc1")  # a pre-release of 0.19.0 is before it
