"""RK301/RK302 on a synthetic pair of trees: which calls are reported, and what they say.

Upstream between 1.0.0 and 1.1.0 (all in the fixture text below): ``Layer.__init__``
gains ``dtype`` and upstream builds the layer in ``BaseRunner.create_weights`` instead
of ``Runner.__init__``; ``BaseRunner.forward`` gains ``y``; ``scale`` is new and takes
two arguments; ``split`` returns three values instead of two; ``gone_fn`` and
``OldThing`` are deleted; ``vllm`` re-exports ``Runner``.
"""

from __future__ import annotations

import pytest
from synth_helpers import line_of, plugin, upstream

from rebasekit.findings import Location, Severity
from rebasekit.scan import scan_plugin

LAYERS_OLD = """\
class Layer:
    def __init__(self, size):
        self.size = size


def split(x):
    return x, x


def gone_fn(x):
    return x, x
"""
LAYERS_NEW = """\
class Layer:
    def __init__(self, size, dtype):
        self.size = size


def split(x):
    return x, x, x


def scale(size, factor):
    return size * factor
"""
RUNNER_OLD = """\
from vllm.layers import Layer


class BaseRunner:
    def forward(self, x):
        return x


class Runner(BaseRunner):
    def __init__(self, cfg):
        self.layer = Layer(4)

    @classmethod
    def build(cls, cfg):
        return cls(cfg)

    def forward(self, x):
        return super().forward(x)


class OldThing:
    pass
"""
RUNNER_NEW = """\
\"\"\"The runner.\"\"\"
from vllm.layers import Layer, scale


class BaseRunner:
    mode = "base"

    def forward(self, x, y):
        return x

    def create_weights(self):
        self.layer = Layer(4, "f32")


class Runner(BaseRunner):
    kind = "runner"

    def __init__(self, cfg):
        self.cfg = cfg

    @classmethod
    def build(cls, cfg):
        return cls(cfg)

    def forward(self, x, y):
        scale(x, 2)
        return super().forward(x, y)
"""
PATCHING = """\
from typing import Generic, TypeVar

T = TypeVar("T")


class Patch(Generic[T]):
    pass
"""
PLUGIN = """\
from vllm import Runner as ReRunner
from vllm import layers, runner
from vllm.layers import Layer, scale
from vllm.runner import OldThing, Runner
from tp.patching import Patch


class LocalPatch(Patch[Missing]):
    pass


class OldThingPatch(Patch[OldThing]):
    def run(self):
        return scale(1)


class RunnerPatch(Patch[Runner]):
    _orig_forward = Runner.forward
    _orig_build = Runner.build.__func__

    def __init__(self, cfg):
        self.layer = Layer(4)

    @classmethod
    def build(cls, cfg):
        return RunnerPatch._orig_build(cls, cfg)

    def forward(self, x, *rest):
        a, b = layers.split(x)
        super(RunnerPatch, self).forward(x)
        super().forward(*rest)
        scale(2, size=3, factor=1)
        scale(*rest)
        super(runner.Runner, self).forward(x)
        super(ReRunner, self).forward(x)
        c, d = layers.gone_fn(x)
        return super().forward(x)
"""


@pytest.fixture  # per test: bench/mutation credits a fixture's calls to the test that ran it
def by_line(tmp_path_factory):
    root = tmp_path_factory.mktemp("calls")
    old = upstream(root / "old", "1.0.0", {"layers.py": LAYERS_OLD, "runner.py": RUNNER_OLD})
    new = upstream(
        root / "new",
        "1.1.0",
        {
            "__init__.py": '__version__ = "1.1.0"\nfrom vllm.runner import Runner\n',
            "layers.py": LAYERS_NEW,
            "runner.py": RUNNER_NEW,
        },
    )
    pkg = plugin(root / "plug", {"m.py": PLUGIN, "patching.py": PATCHING})
    result = scan_plugin(
        str(new), old=str(old), plugin=pkg, patch_bases=["Patch"], select=["RK301", "RK302"]
    )
    out: dict[int, list] = {}
    for f in result.findings:
        assert f.plugin.path == "tp/m.py"
        out.setdefault(f.plugin.line, []).append(f)
    return out


def one(by_line, needle: str):
    found = by_line[line_of(PLUGIN, needle)]
    assert len(found) == 1
    return found[0]


def test_exactly_the_calls_that_no_longer_fit_are_reported(by_line) -> None:
    # Not reported: super() of a class outside the target's MRO, *args that may fill
    # the new parameter, the classmethod's raw function called with cls, a callee
    # deleted upstream (nothing to unpack against).
    reported = [
        "return scale(1)",
        "self.layer = Layer(4)",
        "a, b = layers.split(x)",
        "scale(2, size=3, factor=1)",
        "super(runner.Runner, self).forward(x)",
        "super(ReRunner, self).forward(x)",
        "return super().forward(x)",
    ]
    assert sorted(by_line) == sorted(line_of(PLUGIN, n) for n in reported)


def test_constructor_call_names_the_new_parameter_and_where_upstream_moved_it(by_line) -> None:
    f = one(by_line, "self.layer = Layer(4)")
    assert f.code == "RK301" and f.severity is Severity.ERROR
    assert f.plugin.symbol == "RunnerPatch.__init__"
    assert f.upstream == Location(
        "vllm/layers.py", line_of(LAYERS_NEW, "def __init__"), None, "vllm.layers.Layer.__init__"
    )
    assert f.message == (
        "constructor call Layer(...) (vllm.layers.Layer.__init__) no longer binds at 1.1.0: "
        "missing required argument 'dtype'; it now takes (size, dtype) (was (size))"
    )
    where = f"BaseRunner.create_weights (vllm/runner.py:{line_of(RUNNER_NEW, 'Layer(4,')}: Layer(4, 'f32'))"
    assert (
        f.suggestion
        == f"pass dtype to match (size, dtype); upstream now makes this call in {where}"
    )
    assert f.details["moved_to"] == where
    assert f.details["problems"] == ["missing required argument 'dtype'"]
    assert f.details["upstream_signature"] == "(size, dtype)"
    assert f.details["subject"] == "vllm.layers.Layer|1|"


def test_call_still_made_by_the_same_upstream_method_has_no_moved_note(by_line) -> None:
    # Upstream Runner.forward calls scale itself: nothing moved.
    f = one(by_line, "scale(2, size=3, factor=1)")
    assert f.plugin.symbol == "RunnerPatch.forward"
    assert f.message == (
        "call to vllm.layers.scale no longer binds at 1.1.0: argument 'size' given both by "
        "position and by keyword; it now takes (size, factor)"
    )
    # Nothing to pass or drop: the generic advice.
    assert f.suggestion == "update the call to match (size, factor)"
    assert f.details["moved_to"] is None
    assert f.details["subject"] == "vllm.layers.scale|1|size,factor"


def test_new_callee_without_old_signature_and_patch_of_a_deleted_class(by_line) -> None:
    f = one(by_line, "return scale(1)")
    assert f.plugin.symbol == "OldThingPatch.run"
    assert f.message == (
        "call to vllm.layers.scale no longer binds at 1.1.0: missing required argument "
        "'factor'; it now takes (size, factor)"
    )
    assert f.suggestion == "pass factor to match (size, factor)"


@pytest.mark.parametrize(
    "needle",
    [
        "return super().forward(x)",
        "super(runner.Runner, self).forward(x)",  # module alias + attribute
        "super(ReRunner, self).forward(x)",  # a re-export, resolved to its definition
    ],
)
def test_super_delegation_binds_against_the_next_class_in_the_mro(by_line, needle) -> None:
    f = one(by_line, needle)
    assert f.code == "RK301"
    assert f.plugin.symbol == "RunnerPatch.forward"
    assert f.upstream == Location(
        "vllm/runner.py",
        RUNNER_NEW.splitlines().index("    def forward(self, x, y):") + 1,  # BaseRunner's
        None,
        "vllm.runner.BaseRunner.forward",
    )
    assert f.message == (
        "super() call to vllm.runner.BaseRunner.forward no longer binds at 1.1.0: "
        "missing required argument 'y'; it now takes (x, y) (was (x))"
    )
    assert f.suggestion == "pass y to match (x, y)"


def test_unpacking_through_a_module_attribute_reports_the_new_arity(by_line) -> None:
    f = one(by_line, "a, b = layers.split(x)")
    assert f.code == "RK302" and f.severity is Severity.ERROR
    assert f.upstream == Location(
        "vllm/layers.py", line_of(LAYERS_NEW, "def split(x):"), None, "vllm.layers.split"
    )
    assert f.message == (
        "unpacks vllm.layers.split(...) into 2 names, but at 1.1.0 it returns a 3-tuple "
        "(at 1.0.0: a 2-tuple)"
    )
    assert f.details["returns"] == "a 3-tuple"
    assert f.details["subject"] == "vllm.layers.split|2"
