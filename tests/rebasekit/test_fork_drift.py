"""How a forked file's upstream changes are grouped, and when a copy counts as a fork."""

from __future__ import annotations

from rebasekit.analysis.forkdecl import ForkDecl, detect_fork, fork_drift

DECL = ForkDecl("tp/fork.py", "vllm/x.py", "1.0.0", "header", 1)

BASE = """\
import os

SIZE = 1


class A:
    limit = 3

    def run(self):
        return 1


def helper(x):
    return x


def z():
    return 0
"""


def changes(base: str, new: str, plugin: str = ""):
    drift = fork_drift(DECL, plugin, base, new)
    return [(c.qualname, c.status, c.forked) for c in drift.changes], drift


def test_method_change_is_reported_through_the_method_not_its_class() -> None:
    new = BASE.replace("return 1", "return 2").replace("return 0", "return -1")
    got, drift = changes(BASE, new, plugin="def z():\n    return 0\n")
    # The class body around the method is the same; z after it is still looked at.
    assert got == [("A.run", "changed", False), ("z", "changed", True)]
    assert drift.module_level_changed is False and drift.missing_upstream is False


def test_class_attribute_change_reports_the_class() -> None:
    got, _ = changes(BASE, BASE.replace("limit = 3", "limit = 4"))
    assert got == [("A", "changed", False)]


def test_added_and_removed_definitions() -> None:
    new = BASE.replace("def helper(x):\n    return x\n", "def fresh(x):\n    return x\n")
    got, _ = changes(BASE, new, plugin="def helper(x):\n    return x\n")
    assert got == [("fresh", "added", False), ("helper", "removed", True)]


def test_module_level_code_outside_definitions() -> None:
    _, drift = changes(BASE, BASE.replace("SIZE = 1", "SIZE = 2"))
    assert drift.module_level_changed is True and drift.changes == []
    # Comments and blank lines are not code.
    _, drift = changes(BASE, BASE.replace("SIZE = 1", "# sized\n\nSIZE = 1"))
    assert drift.module_level_changed is False


def test_upstream_file_gone() -> None:
    drift = fork_drift(DECL, "", BASE, None)
    assert drift.missing_upstream is True and drift.changes == []


def _copy(names_alike: list[str], names_different: list[str]) -> tuple[str, str]:
    ours = theirs = ""
    for n in names_alike:
        body = f"def {n}(a):\n    b = a + 1\n    c = b * 2\n    return c\n\n\n"
        ours += body
        theirs += body
    for n in names_different:
        ours += f"def {n}(a):\n    return a\n\n\n"
        theirs += f"def {n}(q):\n    w = q - 7\n    e = w // 3\n    return e\n\n\n"
    return ours, theirs


def test_copy_needs_more_than_half_of_the_shared_definitions_alike() -> None:
    ours, theirs = _copy(["f", "g", "h"], ["k"])
    cand = detect_fork("tp/fork.py", ours, {"vllm/x.py": theirs})
    assert cand is not None
    assert (cand.upstream_path, cand.shared, cand.similar) == (
        "vllm/x.py",
        ["f", "g", "h", "k"],
        ["f", "g", "h"],
    )
    # Exactly half alike is not enough.
    ours, theirs = _copy(["f", "g"], ["k", "m"])
    assert detect_fork("tp/fork.py", ours, {"vllm/x.py": theirs}) is None


def test_copy_is_matched_to_the_file_with_most_alike_definitions() -> None:
    ours, theirs3 = _copy(["f", "g", "h"], [])
    _, theirs2 = _copy(["f", "g"], ["h"])
    cand = detect_fork("tp/fork.py", ours, {"vllm/a.py": theirs2, "vllm/b.py": theirs3})
    assert cand is not None and cand.upstream_path == "vllm/b.py"
