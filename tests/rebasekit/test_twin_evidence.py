"""RK401 evidence: a same-named class counts as a twin by the ordinary members it shares."""

from __future__ import annotations

from synth_helpers import plugin, upstream

from rebasekit.scan import scan_plugin

PATCHING = "from typing import Generic, TypeVar\n\nT = TypeVar('T')\n\n\nclass Patch(Generic[T]):\n    pass\n"
TREE = {
    "a/__init__.py": "",
    "a/engine.py": "class Engine:\n    def __init__(self):\n        self.n = 0\n\n    def step(self):\n        return 1\n",
    "b/__init__.py": "",
    "b/engine.py": "class Engine:\n    def __init__(self):\n        self.n = 1\n\n    def step(self):\n        return 2\n",
    "c/__init__.py": "",
    "c/engine.py": "class Engine:\n    def __init__(self):\n        self.m = 0\n",
}


def scan(tmp_path, members: str):
    tree = upstream(tmp_path / "new", "1.1.0", TREE)
    src = (
        "from vllm.a.engine import Engine\nfrom tp.patching import Patch\n\n\n"
        f"class EnginePatch(Patch[Engine]):\n{members}"
    )
    pkg = plugin(tmp_path / "plug", {"m.py": src, "patching.py": PATCHING})
    return scan_plugin(str(tree), plugin=pkg, patch_bases=["Patch"], select=["RK401"]).findings


def test_sharing_only_init_is_no_evidence(tmp_path) -> None:
    assert scan(tmp_path, "    def __init__(self):\n        self.n = 5\n") == []


def test_shared_ordinary_member_makes_a_twin_and_dunders_are_not_listed(tmp_path) -> None:
    members = (
        "    def __init__(self):\n        self.n = 5\n\n    def step(self):\n        return 3\n"
    )
    (f,) = scan(tmp_path, members)
    # b's Engine shares step; c's shares only __init__ and is not reported.
    assert "vllm.b.engine.Engine" in f.message and "vllm.c.engine" not in f.message
    assert "no selecting switch found, but it defines step too" in f.message
