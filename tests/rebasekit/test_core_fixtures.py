"""rebasekit core checks against the synthetic upstream (two versions) and tiny plugin.

bad.py marks each line that must produce a finding with ``# RKnnn``; good.py holds the
negative cases. The expected set is read from those comments, so the fixture itself is
the specification and every code has a positive and a negative case.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rebasekit.checks.registry import all_checks
from rebasekit.codes import CODES
from rebasekit.findings import Drift, Severity
from rebasekit.index import CodeIndex, FactsCache, Status
from rebasekit.scan import scan_plugin
from rebasekit.upstream import open_tree

FIX = Path(__file__).parent / "fixtures"
PLUGIN = FIX / "plugin" / "tinyplug"
OLD, NEW = str(FIX / "upstream_old"), str(FIX / "upstream_new")
# The codes of the core check modules (the drift kinds read from upstream's call sites
# and definitions, RK217/RK218/RK221 among them, have their own suite: fixtures_drift).
CORE_MODULES = {f"rebasekit.checks.{m}" for m in ("meta", "imports", "targets", "signatures")}
OWN_CODES = [
    code
    for check in all_checks()
    if check.func.__module__ in CORE_MODULES
    for code in check.codes
    if code in CODES and code != "RK003"
]


def _index(spec: str) -> CodeIndex:
    return CodeIndex(open_tree(spec), FactsCache(None))


def _scan(**kw):
    return scan_plugin(
        _index(NEW), old=_index(OLD), plugin=PLUGIN, select=("RK0", "RK1", "RK2"), **kw
    )


def _marked(path: Path) -> set[tuple[int, str]]:
    marks = set()
    for n, line in enumerate(path.read_text().splitlines(), 1):
        for code in re.findall(r"#.*?\b(RK\d{3})\b", line.split("rebasekit:")[0]):
            marks.add((n, code))
    return marks


def test_every_marked_line_and_nothing_else():
    result = _scan()
    got = {(f.plugin.line, f.code) for f in result.findings if f.plugin.path.endswith("bad.py")}
    assert got == _marked(PLUGIN / "bad.py")
    assert [f for f in result.findings if f.plugin.path.endswith("good.py")] == []


def test_every_own_code_has_a_positive_case():
    codes = {f.code for f in _scan().findings}
    syntax = scan_plugin(_index(NEW), plugin=_broken_copy(Path(pytest.TMPDIR)), select=("RK001",))  # type: ignore[attr-defined]
    codes |= {f.code for f in syntax.findings}
    assert set(OWN_CODES) <= codes


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path):
    pytest.TMPDIR = str(tmp_path)  # type: ignore[attr-defined]


def _broken_copy(tmp: Path) -> Path:
    dest = tmp / "plug" / "tinyplug"
    shutil.copytree(PLUGIN, dest)
    (dest / "broken.py").write_text("def f(:\n    pass\n")
    return dest


def test_suggestions_and_drift():
    by = {(f.code, f.details.get("subject")): f for f in _scan().findings}
    moved = by[("RK103", "vllm.engine.core.Scheduler")]
    assert moved.suggestion == "from vllm.sched.scheduler import Scheduler"
    assert (
        by[("RK104", "vllm.engine.core.to_rename")].suggestion
        == "from vllm.engine.core import renamed_fn as to_rename"
    )
    assert by[("RK202", "vllm.engine.core.Scheduler")].upstream.path == "vllm/sched/scheduler.py"
    added = by[("RK210", "__init__:mm_cache")]
    assert "default None" in added.message and added.severity is Severity.WARNING
    assert by[("RK210", "step:budget")].severity is Severity.ERROR
    assert by[("RK102", "vllm.engine.core.NeverWas")].drift is Drift.PREEXISTING
    assert by[("RK105", "vllm.engine.core.old_func")].drift is Drift.NEW
    assert by[("RK102", "vllm.engine.core.AlsoNeverWas")].severity is Severity.WARNING
    assert by[("RK101", "vllm.optional_backend.fast_path")].severity is Severity.INFO


def test_clean_at_old_for_new_only_codes():
    """At the old tree the overrides match: no RK21x, RK220, RK201/202 findings there."""
    result = scan_plugin(_index(OLD), plugin=PLUGIN, select=("RK2",))
    assert result.findings == []


def test_suppressions_select_ignore():
    result = _scan()
    assert {f.details["subject"] for f in result.suppressed} == {
        "vllm.engine.core.Suppressed",
        "vllm.engine.core.SuppressedAbove",
    }
    only = scan_plugin(_index(NEW), plugin=PLUGIN, select=("RK21",))
    assert only.findings and all(f.code.startswith("RK21") for f in only.findings)
    ignored = scan_plugin(_index(NEW), plugin=PLUGIN, select=("RK2",), ignore=("RK21",))
    assert ignored.findings and not any(f.code.startswith("RK21") for f in ignored.findings)


def test_syntax_error_does_not_stop_scan(tmp_path):
    result = scan_plugin(
        _index(NEW),
        old=_index(OLD),
        plugin=_broken_copy(tmp_path),
        patch_bases=("Patch",),
        select=("RK0", "RK1", "RK2"),
    )
    codes = [f.code for f in result.findings]
    assert codes.count("RK001") == 1
    assert "RK103" in codes and "RK210" in codes  # the other files were still scanned


def test_index_resolution_paths():
    ix = _index(NEW)
    assert ix.resolve("vllm.Engine").qualname == "vllm.engine.core.Engine"  # lazy table
    assert ix.resolve("vllm.engine.helper").qualname == "vllm.engine.core.helper"  # star import
    assert ix.resolve("vllm.engine.PublicEngine").qualname == "vllm.engine.core.Engine"  # alias
    assert ix.lookup("vllm.NotExported").status is Status.MISSING  # lazy table is exhaustive
    inherited = ix.resolve("vllm.engine.core.Engine.inherited")
    assert inherited.qualname == "vllm.engine.base.EngineBase.inherited"  # along the MRO
    assert [p.name for p in inherited.signature.params] == ["self", "a", "b"]
    assert ix.resolve("vllm.engine.core.Engine").source.startswith("class Engine(EngineBase):")
    assert [s.module for s in ix.find_definitions("Scheduler")] == ["vllm.sched.scheduler"]


def test_parse_cache_roundtrip(tmp_path):
    cold = CodeIndex(open_tree(NEW), FactsCache(tmp_path))
    cold.resolve("vllm.engine.core.Engine.step")
    warm = CodeIndex(open_tree(NEW), FactsCache(tmp_path))
    sym = warm.resolve("vllm.engine.core.Engine.step")
    assert cold.parsed > 0 and warm.parsed == 0
    assert sym.signature.render() == "(self, budget)"
