"""Every finding code in codes.py has a positive and a negative case in the fixtures.

Computed from real scans of the synthetic fixtures, never from a hand list: a code is
*positive* when some scan reports it, and *negative* when a fixture line marked
``# ok: RKnnn`` (a case that code's check inspects) is not reported with it. A code
added to codes.py without fixture cases fails here.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rebasekit.codes import CODES
from rebasekit.scan import scan_plugin

HERE = Path(__file__).parent
SUITES = [  # (upstream old, upstream new, plugin package)
    (
        HERE / "fixtures" / "upstream_old",
        HERE / "fixtures" / "upstream_new",
        HERE / "fixtures" / "plugin" / "tinyplug",
    ),
    (
        HERE / "fixtures_deep" / "upstream_old",
        HERE / "fixtures_deep" / "upstream_new",
        HERE / "fixtures_deep" / "plugin" / "deepplug",
    ),
    (
        HERE / "fixtures_drift" / "upstream_old",
        HERE / "fixtures_drift" / "upstream_new",
        HERE / "fixtures_drift" / "plugin" / "driftplug",
    ),
]
_OK = re.compile(r"\bok:\s*(RK\d{3}(?:\s*,\s*RK\d{3})*)")


def _variant(tmp: Path, plugin: Path) -> Path:
    """A copy of the core plugin with a file that does not parse and an unused suppression.

    Both cases need a whole-plugin scan to show (RK001 stops nothing else; RK003 is only
    judged without --select), so they live in a copy rather than in the shared fixture.
    """
    dest = tmp / "variant" / plugin.parent.name / plugin.name
    shutil.copytree(plugin.parent, dest.parent)
    (dest / "broken.py").write_text("def f(:\n    pass\n")
    with (dest / "good.py").open("a") as fh:
        fh.write("\nUNUSED = 1  # rebasekit: ignore[RK101] nothing to suppress here\n")
    return dest


@pytest.fixture  # per test: bench/mutation credits a fixture's calls to the test that ran it
def scans(tmp_path_factory) -> list[tuple[Path, list]]:
    out = []
    for old, new, plugin in SUITES:
        out.append((plugin, scan_plugin(str(new), old=str(old), plugin=plugin).findings))
    variant = _variant(tmp_path_factory.mktemp("cov"), SUITES[0][2])
    out.append(
        (variant, scan_plugin(str(SUITES[0][1]), old=str(SUITES[0][0]), plugin=variant).findings)
    )
    return out


def _ok_markers() -> dict[str, set[tuple[str, int]]]:
    """code -> {(plugin-relative path, line)} of the fixture lines marked ``ok: CODE``."""
    marks: dict[str, set[tuple[str, int]]] = {}
    for _, _, plugin in SUITES:
        for path in sorted(plugin.rglob("*.py")):
            rel = path.relative_to(plugin.parent).as_posix()
            for n, line in enumerate(path.read_text().splitlines(), 1):
                for group in _OK.findall(line):
                    for code in re.findall(r"RK\d{3}", group):
                        marks.setdefault(code, set()).add((rel, n))
    return marks


def test_every_code_has_a_positive_case(scans):
    reported = {f.code for _, findings in scans for f in findings}
    assert sorted(set(CODES) - reported) == []


def test_every_code_has_a_negative_case(scans):
    marks = _ok_markers()
    assert sorted(set(CODES) - set(marks)) == [], "codes without an '# ok: CODE' fixture line"
    flagged = {
        (f.code, f.plugin.path, f.plugin.line)
        for plugin, findings in scans[:2]
        for f in findings
        if f.plugin
    }
    wrong = sorted(
        (code, rel, line)
        for code, places in marks.items()
        for rel, line in places
        if (code, rel, line) in flagged
    )
    assert wrong == [], "lines marked ok: CODE are reported with that code"


def test_markers_name_real_codes():
    assert sorted(set(_ok_markers()) - set(CODES)) == []


def test_negative_markers_sit_where_the_check_looks(scans):
    """A marker is only a negative case if the same kind of line *can* be flagged.

    Guard against markers on lines no check ever reports: each marked code must be
    reported somewhere in the same fixture suite's files of the same kind (a file in the
    same plugin), so the check demonstrably inspects that plugin.
    """
    by_plugin: dict[str, set[str]] = {}
    for plugin, findings in scans:
        for f in findings:
            by_plugin.setdefault(plugin.name, set()).add(f.code)
    for code, places in _ok_markers().items():
        plugins = {rel.split("/", 1)[0] for rel, _ in places}
        assert any(code in by_plugin.get(p, set()) for p in plugins), (code, plugins)
