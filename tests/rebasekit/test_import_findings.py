"""RK101-RK105 as the user reads them: message, severity, locations, suggestion, details.

Each upstream change below is written out in the fixture: between 1.0.0 and 1.1.0,
``vllm.core`` loses ``gone``, renames ``old_name`` to ``new_name`` (same body) and moves
``Moved`` to two sched modules; ``vllm.legacy`` is deleted; ``vllm.lazy`` serves ``Thing``
from a package outside the tree through an export table.
"""

from __future__ import annotations

import pytest
from synth_helpers import line_of, plugin, upstream

from rebasekit.findings import Location, Severity
from rebasekit.scan import scan_plugin

CORE_OLD = """\
def helper():
    return 1


def gone():
    return 2


def old_name(a, b):
    c = a + b
    return c * 2


class Moved:
    pass
"""
CORE_NEW = """\
def helper():
    return 1


def new_name(a, b):
    c = a + b
    return c * 2
"""
LAZY = """\
MODULE_ATTRS = {"Thing": "elsewhere.mod:Thing"}


def __getattr__(name):
    from importlib import import_module

    if name in MODULE_ATTRS:
        module_name, attr = MODULE_ATTRS[name].split(":")
        return getattr(import_module(module_name), attr)
    raise AttributeError(name)
"""
PLUGIN = """\
from typing import TYPE_CHECKING
from vllm.core import gone
from vllm.core import old_name as on
from vllm.core import Moved
from vllm.core import Never
from vllm.legacy import X
from vllm.lazy import Thing

if TYPE_CHECKING:
    from vllm.core import Never2
    from vllm.core import old_name


def load():
    try:
        from vllm.nomod import Moved
        from vllm.lazy import Thing as T
    except ImportError:
        pass
"""


@pytest.fixture  # per test: bench/mutation credits a fixture's calls to the test that ran it
def scan(tmp_path_factory):
    root = tmp_path_factory.mktemp("imports")
    old = upstream(root / "old", "1.0.0", {"core.py": CORE_OLD, "legacy.py": "X = 1\n"})
    new = upstream(
        root / "new",
        "1.1.0",
        {
            "core.py": CORE_NEW,
            "lazy.py": LAZY,
            "sched/__init__.py": "",
            "sched/a.py": "class Moved:\n    pass\n",
            "sched/b.py": "class Moved:\n    pass\n",
        },
    )
    pkg = plugin(root / "plug", {"m.py": PLUGIN})
    result = scan_plugin(
        str(new), old=str(old), plugin=pkg, select=["RK101", "RK102", "RK103", "RK104", "RK105"]
    )
    by_line = {f.plugin.line: f for f in result.findings}
    assert len(by_line) == len(result.findings)
    return by_line, old / "vllm", new / "vllm"


def at(scan, needle: str):
    return scan[0][line_of(PLUGIN, needle)]


def test_deleted_name_is_rk105_naming_where_it_was(scan) -> None:
    f = at(scan, "from vllm.core import gone")
    assert f.code == "RK105" and f.severity is Severity.ERROR
    assert f.plugin == Location(
        "tp/m.py", line_of(PLUGIN, "from vllm.core import gone"), None, None
    )
    old_line = line_of(CORE_OLD, "def gone")
    assert f.message == (
        f"gone was deleted from vllm.core (it was defined at vllm/core.py:{old_line} in {scan[1]})"
    )
    assert f.upstream == Location("vllm/core.py", 1, None, "vllm.core")
    assert f.suggestion == "port the code that used it; upstream has no replacement"
    assert f.details == {
        "guard": None,
        "subject": "vllm.core.gone",
        "target": "vllm.core.gone",
        "module": "vllm.core",
        "name": "gone",
        "defined_at": f"vllm/core.py:{old_line}",
        "old_tree": str(scan[1]),
    }


def test_renamed_name_is_rk104_keeping_the_local_alias(scan) -> None:
    f = at(scan, "old_name as on")
    new_line = line_of(CORE_NEW, "def new_name")
    assert f.code == "RK104" and f.severity is Severity.ERROR
    assert f.message == (
        f"old_name from vllm.core was renamed to new_name "
        f"(same body shape, defined at vllm/core.py:{new_line})"
    )
    assert f.upstream == Location("vllm/core.py", new_line, None, "vllm.core.new_name")
    assert f.suggestion == "from vllm.core import new_name as on"
    assert f.details["renamed_to"] == "vllm.core.new_name"


def test_guarded_rename_is_a_warning_with_the_guard_named(scan) -> None:
    f = at(scan, "from vllm.core import old_name")
    assert f.code == "RK104" and f.severity is Severity.WARNING
    assert f.message.endswith(" (under TYPE_CHECKING)")
    assert f.suggestion == "from vllm.core import new_name as old_name"
    assert f.details["guard"] == "type_checking"


def test_moved_name_is_rk103_with_the_other_homes(scan) -> None:
    f = at(scan, "from vllm.core import Moved")
    assert f.code == "RK103" and f.severity is Severity.ERROR
    assert f.message == (
        "Moved is no longer in vllm.core; it is defined in vllm.sched.a "
        "(also defined in vllm.sched.b)"
    )
    assert f.upstream == Location("vllm/sched/a.py", 1, None, "vllm.sched.a.Moved")
    assert f.suggestion == "from vllm.sched.a import Moved"
    assert f.details == {
        "moved_to": "vllm.sched.a.Moved",
        "guard": None,
        "subject": "vllm.core.Moved",
        "target": "vllm.core.Moved",
        "module": "vllm.core",
        "name": "Moved",
        "new_module": "vllm.sched.a",
        "also_in": ["vllm.sched.b"],
    }


def test_never_defined_name_is_rk102_pointing_at_the_module(scan) -> None:
    f = at(scan, "from vllm.core import Never")
    assert f.code == "RK102" and f.severity is Severity.ERROR
    assert f.message == f"vllm.core has no name Never in {scan[2]}"
    assert f.upstream == Location("vllm/core.py", 1, None, "vllm.core")
    assert f.suggestion is None


def test_type_checking_import_is_a_warning(scan) -> None:
    f = at(scan, "import Never2")
    assert f.code == "RK102" and f.severity is Severity.WARNING
    assert f.message == f"vllm.core has no name Never2 in {scan[2]} (under TYPE_CHECKING)"


def test_deleted_module_is_rk101(scan) -> None:
    f = at(scan, "vllm.legacy")
    assert f.code == "RK101" and f.severity is Severity.ERROR
    assert f.message == f"module vllm.legacy does not exist in {scan[2]}"
    assert f.upstream is None and f.suggestion is None
    assert f.details == {
        "guard": None,
        "subject": "vllm.legacy.X",
        "target": "vllm.legacy.X",
        "module": "vllm.legacy",
        "missing": "vllm.legacy",
        "tree": str(scan[2]),
    }


def test_missing_module_inside_try_is_info_and_points_to_the_new_home(scan) -> None:
    f = at(scan, "vllm.nomod")
    assert f.code == "RK101" and f.severity is Severity.INFO
    assert f.plugin == Location("tp/m.py", line_of(PLUGIN, "vllm.nomod"), None, "load")
    assert f.message == (
        f"module vllm.nomod does not exist in {scan[2]} (inside try/except ImportError)"
    )
    assert f.suggestion == "from vllm.sched.a import Moved"


def test_export_table_into_a_missing_package_names_that_package(scan) -> None:
    f = at(scan, "from vllm.lazy import Thing")
    assert f.code == "RK101" and f.severity is Severity.ERROR
    # vllm.lazy exists; the package its table points to does not.
    assert f.message == f"module elsewhere does not exist in {scan[2]}"
    guarded = at(scan, "Thing as T")
    assert guarded.code == "RK101" and guarded.severity is Severity.INFO
    assert guarded.message.endswith(" (inside try/except ImportError)")


def test_moved_name_prefers_the_nearest_module_and_vendored_copies_last(tmp_path) -> None:
    thing = "class Thing:\n    pass\n"
    old = upstream(tmp_path / "old", "1.0.0", {"engine/__init__.py": "", "engine/core.py": thing})
    new = upstream(
        tmp_path / "new",
        "1.1.0",
        {
            "engine/__init__.py": "",
            "engine/core.py": "X = 1\n",
            "engine/sched.py": thing,
            "aa.py": thing,
            "zz/__init__.py": "",
            "zz/mod.py": thing,
            "third_party/__init__.py": "",
            "third_party/t.py": thing,
            "vllm_flash_attn/__init__.py": "",
            "vllm_flash_attn/f.py": thing,
        },
    )
    pkg = plugin(tmp_path / "plug", {"m.py": "from vllm.engine.core import Thing\n"})
    (f,) = scan_plugin(str(new), old=str(old), plugin=pkg, select=["RK103"]).findings
    # Same package first; then by name, with the vendored trees after the rest; three shown.
    assert f.message == (
        "Thing is no longer in vllm.engine.core; it is defined in vllm.engine.sched "
        "(also defined in vllm.aa, vllm.zz.mod, vllm.third_party.t)"
    )
    assert f.suggestion == "from vllm.engine.sched import Thing"
