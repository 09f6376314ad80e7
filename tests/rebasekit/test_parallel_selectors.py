"""What a twin's selecting condition is traced to: env vars, config reads, constants.

The finding must tell the user which switch to set to keep the patched class in use, so
the condition ``self.use_v2`` is followed into the property that computes it, the
helpers it calls, and the module-level helper returning an architecture list.
"""

from __future__ import annotations

from pathlib import Path

from rebasekit.analysis.parallel import Selector, find_twins
from rebasekit.index import CodeIndex, FactsCache
from rebasekit.upstream import open_tree

WORKER = """\
import os
from vllm import envs
from vllm.worker.runner import Runner

ARCHS = ["QwenForCausalLM", "LlamaForCausalLM"]


def _arch_list():
    return ARCHS


class Worker:
    def __init__(self, model_config):
        self.model_config = model_config
        if self.use_v2:
            from vllm.worker.v2.runner import Runner as R2
            self.runner = R2()
        else:
            self.runner = Runner()

    @property
    def use_v2(self):
        return self._check() and os.environ["VLLM_FORCE"] == "1"

    def _check(self):
        return envs.VLLM_USE_V2 and self.model_config.arch in _arch_list() and os.environ.get("VLLM_X")

    def unrelated(self):
        return os.getenv("NOT_READ")

    def use_v3(self):  # a plain method named like a flag: not a property, never followed
        return False
"""

FILES = {
    "vllm/__init__.py": "",
    "vllm/envs.py": "VLLM_USE_V2 = False\n",
    "vllm/worker/__init__.py": "",
    "vllm/worker/runner.py": "class Runner:\n    pass\n",
    "vllm/worker/v2/__init__.py": "",
    "vllm/worker/v2/runner.py": "class Runner:\n    pass\n",
    "vllm/worker/worker.py": WORKER,
    # Under TYPE_CHECKING only for annotations: never a runtime choice.
    "vllm/worker/hints.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from vllm.worker.v2.runner import Runner\n"
    ),
    # Imports the twin on both branches: the condition does not choose it.
    "vllm/worker/both.py": (
        "import sys\n"
        "if sys.platform == 'linux':\n"
        "    import vllm.worker.v2.runner\n"
        "else:\n"
        "    from vllm.worker.v2.runner import Runner\n"
    ),
}


def make_index(root: Path) -> CodeIndex:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return CodeIndex(open_tree(str(root)), FactsCache(None))


def test_condition_is_traced_through_the_property_and_its_helpers(tmp_path: Path) -> None:
    (twin,) = find_twins(make_index(tmp_path / "tree"), "vllm.worker.runner.Runner")
    (sel,) = twin.selectors  # hints.py and both.py choose nothing
    assert (sel.relpath, sel.line, sel.condition, sel.branch) == (
        "vllm/worker/worker.py",
        15,
        "self.use_v2",
        "if",
    )
    assert sel.resolved_at == "vllm/worker/worker.py:22 (Worker.use_v2)"
    # The property reads VLLM_FORCE; its helper _check reads VLLM_USE_V2 and VLLM_X.
    # 'unrelated' is not called from the property, so NOT_READ is not a switch.
    assert sel.env_vars == ["VLLM_FORCE", "VLLM_USE_V2", "VLLM_X"]
    assert sel.config_reads == ["model_config.arch"]
    assert sel.constants == {"ARCHS": ["LlamaForCausalLM", "QwenForCausalLM"]}


def test_render_lists_everything_a_user_can_switch(tmp_path: Path) -> None:
    (twin,) = find_twins(make_index(tmp_path / "tree"), "vllm.worker.runner.Runner")
    assert twin.selectors[0].render() == (
        "vllm/worker/worker.py:15 selects it when `self.use_v2` is true (computed at "
        "vllm/worker/worker.py:22 (Worker.use_v2); env VLLM_FORCE, VLLM_USE_V2, VLLM_X; "
        "reads model_config.arch; ARCHS = {LlamaForCausalLM, QwenForCausalLM})"
    )


def test_render_caps_long_lists() -> None:
    sel = Selector(
        "a.py",
        3,
        "not x",
        "else",
        config_reads=[f"c_config.r{i}" for i in range(10)],
        constants={
            "BIG": [f"m{i}" for i in range(7)],
            "SIX": [f"s{i}" for i in range(6)],
            "EMPTY": [],
        },
    )
    assert sel.render() == (
        "a.py:3 selects it when `not x` is false (reads "
        + ", ".join(f"c_config.r{i}" for i in range(8))
        + "; BIG = {m0, m1, m2, m3, m4, m5, …}; SIX = {s0, s1, s2, s3, s4, s5}; EMPTY)"
    )


def test_render_without_details_is_just_the_place() -> None:
    assert Selector("b.py", 9, "flag", "if").render() == "b.py:9 selects it when `flag` is true"


WORKER2 = """\
from functools import cached_property
from os import getenv

from vllm.worker.runner import Runner


class Worker:
    def __init__(self, vllm_config):
        self.vllm_config = vllm_config
        if self.use_v2:
            from vllm.worker.v2.runner import Runner as R2
            self.runner = R2()
        else:
            self.runner = Runner()

    @cached_property
    def use_v2(self):
        return getenv("VLLM_Y") and self.vllm_config.model_config.arch == "x"
"""


def test_cached_property_bare_getenv_and_nested_config_reads(tmp_path: Path) -> None:
    files = {
        k: v for k, v in FILES.items() if k not in ("vllm/worker/hints.py", "vllm/worker/both.py")
    }
    files["vllm/worker/worker.py"] = WORKER2
    root = tmp_path / "tree"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (twin,) = find_twins(
        CodeIndex(open_tree(str(root)), FactsCache(None)), "vllm.worker.runner.Runner"
    )
    (sel,) = twin.selectors
    lines = WORKER2.splitlines()
    assert sel.resolved_at == (
        f"vllm/worker/worker.py:{lines.index('    def use_v2(self):') + 1} (Worker.use_v2)"
    )
    assert sel.env_vars == ["VLLM_Y"]
    # Each config object is named by its own attribute, not by the whole chain.
    assert sorted(sel.config_reads) == ["model_config.arch", "vllm_config.model_config"]
