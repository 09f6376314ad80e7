"""Which same-named classes count as parallel implementations (RK401), on a small tree.

A twin is a class that does the patched class's job without inheriting the patch; a
subclass of the patched class (directly or through another class) runs the patch
and must never be reported.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rebasekit.analysis.parallel import find_twins
from rebasekit.index import CodeIndex, FactsCache
from rebasekit.upstream import open_tree

FILES = {
    "vllm/__init__.py": "",
    "vllm/worker/__init__.py": "",
    "vllm/worker/runner.py": "class Runner:\n    def execute(self):\n        return 1\n",
    # A same-named subclass: inherits the patched methods.
    "vllm/worker/ext/__init__.py": "",
    "vllm/worker/ext/runner.py": (
        "from vllm.worker.runner import Runner as BaseRunner\n\n"
        "class Runner(BaseRunner):\n    pass\n"
    ),
    # A same-named grandchild, through a differently named class.
    "vllm/worker/deep/__init__.py": "",
    "vllm/worker/deep/mid.py": "from vllm.worker.runner import Runner\n\nclass Mid(Runner):\n    pass\n",
    "vllm/worker/deep/runner.py": "from vllm.worker.deep.mid import Mid\n\nclass Runner(Mid):\n    pass\n",
    # An independent reimplementation, chosen by an env var: the twin.
    "vllm/worker/v2/__init__.py": "",
    "vllm/worker/v2/runner.py": "class Runner:\n    def execute(self):\n        return 2\n",
    "vllm/worker/worker.py": (
        "import os\n"
        "from vllm.worker.runner import Runner\n\n"
        "class Worker:\n"
        "    def __init__(self):\n"
        "        if os.getenv('VLLM_USE_V2') == '1':\n"
        "            from vllm.worker.v2.runner import Runner as R2\n"
        "            self.runner = R2()\n"
        "        else:\n"
        "            self.runner = Runner()\n"
    ),
    # A conditional expression picking the twin through an import alias.
    "vllm/envs.py": "VLLM_USE_V2 = False\n",
    "vllm/worker/pick.py": (
        "from vllm import envs\n"
        "from vllm.worker.runner import Runner\n"
        "from vllm.worker.v2.runner import Runner as R2\n\n"
        "def pick():\n"
        "    return Runner if not envs.VLLM_USE_V2 else R2\n"
    ),
    # Test helpers that happen to share the name are not part of the product.
    "vllm/worker/test/__init__.py": "",
    "vllm/worker/test/runner.py": "class Runner:\n    pass\n",
}


@pytest.fixture
def index(tmp_path: Path) -> CodeIndex:
    for rel, text in FILES.items():
        path = tmp_path / "tree" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return CodeIndex(open_tree(str(tmp_path / "tree")), FactsCache(None))


def test_only_the_independent_class_is_a_twin(index: CodeIndex) -> None:
    twins = find_twins(index, "vllm.worker.runner.Runner")
    assert [t.qualname for t in twins] == ["vllm.worker.v2.runner.Runner"]
    assert twins[0].relpath == "vllm/worker/v2/runner.py"
    assert twins[0].line == 1


def test_twin_selector_names_the_condition_and_env_var(index: CodeIndex) -> None:
    (twin,) = find_twins(index, "vllm.worker.runner.Runner")
    by_path = {s.relpath: s for s in twin.selectors}
    assert set(by_path) == {"vllm/worker/worker.py", "vllm/worker/pick.py"}
    sel = by_path["vllm/worker/worker.py"]
    assert (sel.relpath, sel.line, sel.branch) == ("vllm/worker/worker.py", 6, "if")
    assert sel.condition == "os.getenv('VLLM_USE_V2') == '1'"
    assert sel.env_vars == ["VLLM_USE_V2"]
    assert sel.render() == (
        "vllm/worker/worker.py:6 selects it when `os.getenv('VLLM_USE_V2') == '1'` is true (env VLLM_USE_V2)"
    )


def test_unknown_or_non_class_target_has_no_twins(index: CodeIndex) -> None:
    assert find_twins(index, "vllm.worker.runner.Nope") == []
    assert find_twins(index, "vllm.worker.worker.os") == []


def test_conditional_expression_through_an_alias_is_a_selector(index: CodeIndex) -> None:
    (twin,) = find_twins(index, "vllm.worker.runner.Runner")
    sel = next(s for s in twin.selectors if s.relpath == "vllm/worker/pick.py")
    # The twin is the else branch: it is taken when the condition is false.
    assert (sel.line, sel.branch, sel.condition) == (6, "else", "not envs.VLLM_USE_V2")
    assert sel.env_vars == ["VLLM_USE_V2"]
    assert "selects it when `not envs.VLLM_USE_V2` is false (env VLLM_USE_V2)" in sel.render()


def test_subclass_through_a_diamond_of_bases_is_not_a_twin(tmp_path: Path) -> None:
    # b.Runner reaches the target only through its first base; the walk meets Mixin twice
    # (through Side and Extra) before it gets there, and torch's Module is outside the tree.
    files = {
        "vllm/__init__.py": "",
        "vllm/a.py": "class Runner:\n    def execute(self):\n        return 1\n",
        "vllm/mix.py": (
            "import torch\n\n"
            "class Mixin(torch.nn.Module):\n    pass\n\n"
            "class Side(Mixin):\n    pass\n\n"
            "class Extra(Mixin):\n    pass\n"
        ),
        "vllm/b.py": (
            "from vllm.a import Runner as Base\n"
            "from vllm.mix import Extra, Side\n\n"
            "class Runner(Base, Side, Extra):\n    pass\n"
        ),
    }
    for rel, text in files.items():
        path = tmp_path / "tree" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    index = CodeIndex(open_tree(str(tmp_path / "tree")), FactsCache(None))
    assert find_twins(index, "vllm.a.Runner") == []
