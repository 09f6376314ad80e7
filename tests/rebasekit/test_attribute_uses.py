"""Which ``self.X`` reads a patch relies on, and how the target class provides them."""

from __future__ import annotations

from synth_helpers import line_of, plugin, upstream

from rebasekit.analysis.attrs import attribute_uses, provision
from rebasekit.load import as_index
from rebasekit.scan import load_corpus

PATCHING = "from typing import Generic, TypeVar\n\nT = TypeVar('T')\n\n\nclass Patch(Generic[T]):\n    pass\n"
RUNNER = """\
class Base:
    def __init__(self):
        self.input_ids = make_ids()


class Runner(Base):
    limit = 8

    def __init__(self, cfg):
        super().__init__()
        self.positions = Buffer(cfg)
"""
PLUGIN = """\
from vllm.runner import Runner
from tp.patching import Patch


class RunnerPatch(Patch[Runner]):
    _orig_init = Runner.__init__

    def helper(self):
        return 1

    def __init__(self, cfg):
        RunnerPatch._orig_init(self, cfg)
        self.mine = 1
        n = self.positions.gpu
        m = self.positions.cpu + self.positions.gpu
        kind = self.__class__
        return self._orig_init, self.helper(), self.mine, n, m, kind

    def later(me):
        return me.input_ids
"""


def uses(tmp_path):
    pkg = plugin(tmp_path / "plug", {"m.py": PLUGIN, "patching.py": PATCHING})
    corpus = load_corpus(pkg, ["Patch"])
    (patch,) = corpus.patches
    return attribute_uses(corpus, patch)


def test_reads_the_patch_does_not_provide_itself(tmp_path) -> None:
    got = [(u.attr, u.line, u.method, u.accessors) for u in uses(tmp_path)]
    # Not listed: the patch's own members and assignments, _orig_ aliases, dunders.
    assert got == [
        ("positions", line_of(PLUGIN, "n = self.positions.gpu"), "__init__", ["gpu", "cpu"]),
        ("input_ids", line_of(PLUGIN, "return me.input_ids"), "later", []),
    ]


def test_provision_along_the_mro_and_class_members(tmp_path) -> None:
    index = as_index(str(upstream(tmp_path / "new", "1.0.0", {"runner.py": RUNNER})))
    runner = index.resolve("vllm.runner.Runner")
    ids = provision(index, runner, "input_ids")
    assert [(where, v.kind, v.detail) for where, v in ids.assignments] == [
        ("Base.__init__", "call", "make_ids")
    ]
    assert ids.member is None and ids.provided
    limit = provision(index, runner, "limit")
    assert limit.assignments == [] and limit.member is not None
    assert limit.member.qualname == "vllm.runner.Runner.limit" and limit.provided
    assert not provision(index, runner, "nothing").provided
