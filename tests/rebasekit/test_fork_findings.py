"""RK403/RK404 findings for forked files: what changed, whether the fork is affected, the fix.

Fixture facts used below: from upstream_old (1.0.0) to upstream_new (1.1.0),
vllm/utils/mathx.py gains ``align`` and changes ``round_up``; vllm/config.py exists
only at 1.1.0; deepplug/tokfork.py copies vllm/utils/tokens.py's three functions.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deep_helpers import NEW, OLD, PLUGIN
from synth_helpers import plugin as synth_plugin
from synth_helpers import upstream

from rebasekit.findings import Location, Severity
from rebasekit.scan import scan_plugin


@pytest.fixture  # per test: bench/mutation credits a fixture's calls to the test that ran it
def fixture_findings():
    return {
        f.plugin.path: f
        for f in scan_plugin(
            str(NEW), old=str(OLD), plugin=PLUGIN, select=["RK403", "RK404"]
        ).findings
    }


def make_plugin(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text(
        '[project]\nname = "tp"\nversion = "0"\n\n[tool.rebasekit]\nplugin = "tp"\n'
    )
    (root / "tp").mkdir()
    (root / "tp" / "__init__.py").write_text("")
    for name, text in files.items():
        (root / "tp" / name).write_text(text)
    return root / "tp"


def test_fork_with_a_changed_forked_definition(fixture_findings) -> None:
    f = fixture_findings["deepplug/mathx_fork.py"]
    assert f.code == "RK403" and f.severity is Severity.WARNING
    assert f.plugin == Location("deepplug/mathx_fork.py", 1, None, None)
    assert f.upstream == Location("vllm/utils/mathx.py")
    assert f.message == (
        "fork deepplug/mathx_fork.py of vllm/utils/mathx.py@1.0.0: upstream changed by 1.1.0: "
        "align added; round_up changed [forked] — 1 forked definition(s) affected: round_up"
    )
    assert (
        f.suggestion
        == "run `rebasekit port --to 1.1.0` to merge, then bump the fork header to @1.1.0"
    )
    assert f.details["changes"] == [
        {"qualname": "align", "status": "added", "forked": False},
        {"qualname": "round_up", "status": "changed", "forked": True},
    ]
    assert f.details["subject"] == "vllm/utils/mathx.py|align,round_up"
    assert f.details["declared_by"] == "header"
    assert "+    if multiple <= 0:" in f.details["diffs"]["round_up"]


def test_undeclared_copy_is_rk404_with_the_header_to_add(fixture_findings) -> None:
    f = fixture_findings["deepplug/tokfork.py"]
    assert f.code == "RK404" and f.plugin == Location("deepplug/tokfork.py", 1, None, None)
    assert f.upstream == Location("vllm/utils/tokens.py")
    assert f.message == (
        "deepplug/tokfork.py copies vllm/utils/tokens.py (3 of 3 shared definitions alike: "
        "count_tokens, join_tokens, truncate_tokens) but declares no fork; treated as a fork at 1.0.0"
    )
    header = "# rebasekit: fork-of vllm/utils/tokens.py@1.0.0"
    assert (
        f.suggestion
        == f"add `{header}` as the file's first line (or a [tool.rebasekit.forks] entry)"
    )
    assert f.details["declaration"] == header
    assert (
        f.details["similar"]
        == f.details["shared"]
        == ["count_tokens", "join_tokens", "truncate_tokens"]
    )


def test_change_outside_the_forked_definitions_is_info(tmp_path: Path) -> None:
    plugin = make_plugin(
        tmp_path,
        {
            "m.py": (
                "# rebasekit: fork-of vllm/utils/mathx.py@1.0.0\n"
                "def cdiv(a, b):\n    return -(a // -b)\n"
            )
        },
    )
    (f,) = scan_plugin(str(NEW), old=str(OLD), plugin=plugin, select=["RK403"]).findings
    assert f.severity is Severity.INFO
    assert f.message.endswith("align added; round_up changed — none of the forked definitions")
    assert f.suggestion == "bump the fork declaration to @1.1.0 after review"


def test_fork_of_a_file_upstream_removed(tmp_path: Path) -> None:
    plugin = make_plugin(
        tmp_path, {"gone.py": "# rebasekit: fork-of vllm/config.py@1.1.0\ndef f():\n    return 1\n"}
    )
    (f,) = scan_plugin(str(OLD), old=str(NEW), plugin=plugin, select=["RK403"]).findings
    assert f.severity is Severity.WARNING and f.plugin == Location("tp/gone.py", 1, None, None)
    assert f.message == "fork tp/gone.py: upstream vllm/config.py no longer exists at 1.0.0"
    assert f.suggestion == "find where its definitions moved (rebasekit scan-imports) and re-fork"
    assert f.details["subject"] == "vllm/config.py|gone"


def test_fork_whose_recorded_base_cannot_be_read(tmp_path: Path) -> None:
    plugin = make_plugin(
        tmp_path,
        {"bad.py": "\n# rebasekit: fork-of vllm/nothere.py@1.1.0\ndef g():\n    return 1\n"},
    )
    (f,) = scan_plugin(str(OLD), old=str(NEW), plugin=plugin, select=["RK403"]).findings
    assert f.severity is Severity.WARNING
    assert f.plugin == Location("tp/bad.py", 2, None, None)  # the header's line
    assert (
        f.message
        == "fork tp/bad.py: cannot read the recorded upstream (vllm/nothere.py does not exist at 1.1.0)"
    )
    assert f.suggestion == "fix the fork declaration's path@version"
    assert f.details["subject"] == "vllm/nothere.py|base"


def test_fork_whose_upstream_changed_only_outside_definitions(tmp_path: Path) -> None:
    text = "LIMIT = {}\n\n\ndef f():\n    return LIMIT\n"
    old = upstream(tmp_path / "old", "1.0.0", {"x.py": text.format(1)})
    new = upstream(tmp_path / "new", "1.1.0", {"x.py": text.format(2)})
    pkg = synth_plugin(
        tmp_path / "plug", {"f.py": "# rebasekit: fork-of vllm/x.py@1.0.0\n" + text.format(1)}
    )
    (f,) = scan_plugin(str(new), old=str(old), plugin=pkg, select=["RK403"]).findings
    assert f.severity is Severity.INFO
    assert f.message == (
        "fork tp/f.py of vllm/x.py@1.0.0: upstream changed by 1.1.0: module-level code changed"
        " — none of the forked definitions"
    )
    assert f.details["changes"] == [] and f.details["subject"] == "vllm/x.py|"


def test_copy_of_two_definitions_after_a_dunder_is_an_undeclared_fork(tmp_path: Path) -> None:
    funcs = (
        "def first(a):\n    b = a + 1\n    return b * 2\n\n\n"
        "def second(a):\n    c = a - 1\n    return c // 2\n"
    )
    old = upstream(tmp_path / "old", "1.0.0", {"util.py": funcs})
    new = upstream(tmp_path / "new", "1.1.0", {"util.py": funcs})
    copy = "def __dir__():\n    return []\n\n\n" + funcs
    pkg = synth_plugin(tmp_path / "plug", {"copy.py": copy})
    (f,) = scan_plugin(str(new), old=str(old), plugin=pkg, select=["RK404"]).findings
    assert f.plugin == Location("tp/copy.py", 1, None, None)
    assert f.upstream == Location("vllm/util.py")
    assert f.message == (
        "tp/copy.py copies vllm/util.py (2 of 2 shared definitions alike: first, second) "
        "but declares no fork; treated as a fork at 1.0.0"
    )
