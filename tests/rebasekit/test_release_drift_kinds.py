"""Drift kinds seen between real releases, each reduced to a few lines of upstream and plugin.

Every kind has a firing case and a near-identical case that must stay quiet:

* RK402 on wrappers: a wrapper that passes the original through is not drifted by an
  unrelated body change; one that reads an attribute the original now assigns
  differently is, and the message says where the change meets the wrapper;
* RK302 through ``self``: ``a, b = self.split(x)`` in a patch unpacks the target's method;
* RK310: ``a, *rest = self._orig_split(x)`` when the tuple changed length;
* RK311: a plugin function calling an upstream function that is gone;
* RK312: a replacing override missing an attribute upstream's new version assigns;
* RK303 per method: each method reading a removed attribute is reported;
* RK203 on the override as well as RK220 on its ``_orig_`` alias;
* RK215 says when the override re-declares upstream's default at OLD.
"""

from __future__ import annotations

import pytest
from synth_helpers import line_of, plugin, upstream

from rebasekit.findings import Severity
from rebasekit.scan import scan_plugin

RUNNER_OLD = """\
class Runner:
    def __init__(self):
        self.cache = {}
        self.flag = True
        self.mode = "a"

    def step(self, x):
        y = x + 1
        return y

    def load(self, x):
        self.table = [x]
        return x

    def split(self, x):
        return x, x

    def pair(self, x):
        return x, x

    def start(self):
        self.size = 1

    def run(self):
        return self.size

    def capture(self, mode="piecewise", size=8):
        return mode, size

    @classmethod
    def from_dict(cls, d):
        return cls()


def helper(x):
    return x


def kept(x):
    return x
"""
RUNNER_NEW = """\
class Runner:
    def __init__(self):
        self.cache = {}
        self.mode = "a"

    def step(self, x):
        y = x + 2
        z = y * 3
        return z

    def load(self, x):
        self.table = make_table(x)
        return x

    def split(self, x):
        return x, x, x

    def pair(self, x):
        return x, x

    def start(self):
        self.size = 1
        self.aggregator = make_aggregator()

    def run(self):
        return self.size, self.aggregator

    def capture(self, mode="full", size=16):
        return mode, size


def kept(x):
    return x
"""
PATCHING = """\
from typing import Generic, TypeVar

T = TypeVar("T")


class Patch(Generic[T]):
    pass
"""
PLUGIN = """\
from vllm.runner import Runner, helper, kept
from tp.patching import Patch


class RunnerPatch(Patch[Runner]):
    _orig_step = Runner.step
    _orig_load = Runner.load
    _orig_split = Runner.split
    _orig_pair = Runner.pair
    _orig_from_dict = Runner.from_dict

    def step(self, x):
        return self._orig_step(x)

    def load(self, x):
        out = self._orig_load(x)
        print(self.table)
        return out

    def split(self, x):
        first, *rest = self._orig_split(x)
        return first, *rest

    def pair(self, x):
        first, *rest = self._orig_pair(x)
        return first, *rest

    def use_split(self, x):
        a, b = self.split(x)
        c, d = self.pair(x)
        return a, b, c, d

    def start(self):
        self.size = 2

    def capture(self, mode="piecewise", size=4):
        return mode, size

    @classmethod
    def from_dict(cls, d):
        return RunnerPatch._orig_from_dict(cls, d)

    def check(self):
        return self.flag

    def check_again(self):
        return self.flag and self.mode


def work(x):
    return helper(x) + kept(x)
"""


@pytest.fixture
def findings(tmp_path_factory):
    root = tmp_path_factory.mktemp("kinds")
    old = upstream(root / "old", "1.0.0", {"runner.py": RUNNER_OLD})
    new = upstream(root / "new", "1.1.0", {"runner.py": RUNNER_NEW})
    pkg = plugin(root / "plug", {"m.py": PLUGIN, "patching.py": PATCHING})
    result = scan_plugin(str(new), old=str(old), plugin=pkg, patch_bases=["Patch"])
    return result.findings


def at(findings, code: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in findings:
        if f.code == code:
            out.setdefault(f.plugin.symbol, []).append(f)
    return out


def test_rk402_reports_only_wrappers_the_change_meets(findings) -> None:
    by = at(findings, "RK402")
    # step passes its original through; split/pair changes are the return checks'
    assert "RunnerPatch.step" not in by
    (load,) = by["RunnerPatch.load"]
    assert load.severity is Severity.INFO
    assert load.message == (
        "RunnerPatch.load wraps vllm.runner.Runner.load, whose body changed upstream between "
        "1.0.0 and 1.1.0 (-1/+1 lines); the original now assigns self.table (which the "
        "wrapper reads) differently"
    )


def test_unpacking_self_method_follows_the_target(findings) -> None:
    by = at(findings, "RK302")
    (f,) = by["RunnerPatch.use_split"]
    assert f.plugin.line == line_of(PLUGIN, "a, b = self.split(x)")
    assert f.severity is Severity.ERROR
    assert "into 2 names, but at 1.1.0 it returns a 3-tuple (at 1.0.0: a 2-tuple)" in f.message
    assert f.upstream.symbol == "vllm.runner.Runner.split"
    assert len(by) == 1  # ``c, d = self.pair(x)``: pair still returns a 2-tuple


def test_starred_unpacking_of_a_tuple_that_changed_length(findings) -> None:
    by = at(findings, "RK310")
    assert sorted(by) == ["RunnerPatch.split"]  # pair's tuple kept its length
    (f,) = by["RunnerPatch.split"]
    assert f.severity is Severity.WARNING
    assert f.plugin.line == line_of(PLUGIN, "first, *rest = self._orig_split(x)")
    assert f.message == (
        "unpacks vllm.runner.Runner.split(...) as 1 names and a starred rest, but its tuple "
        "went from 2 elements at 1.0.0 to 3 at 1.1.0"
    )


def test_call_of_a_removed_function_is_reported_where_it_is_called(findings) -> None:
    by = at(findings, "RK311")
    assert sorted(by) == ["work"]  # kept() still exists
    (f,) = by["work"]
    assert f.severity is Severity.ERROR
    assert f.plugin.line == line_of(PLUGIN, "return helper(x) + kept(x)")
    assert f.message == (
        "work calls vllm.runner.helper(...), which is gone at 1.1.0: it was deleted from its "
        f"module (at 1.0.0 the function was defined at vllm/runner.py:"
        f"{line_of(RUNNER_OLD, 'def helper(x):')})"
    )


def test_replacing_override_misses_an_attribute_upstream_now_assigns(findings) -> None:
    by = at(findings, "RK312")
    assert sorted(by) == ["RunnerPatch.start"]  # load wraps its original: it still assigns
    (f,) = by["RunnerPatch.start"]
    assert f.upstream.line == line_of(RUNNER_NEW, "self.aggregator = make_aggregator()")
    assert f.message == (
        "RunnerPatch.start replaces vllm.runner.Runner.start without calling it; at 1.1.0 "
        "upstream's version assigns self.aggregator (it did not at 1.0.0), which Runner.run "
        f"reads (vllm/runner.py:{line_of(RUNNER_NEW, 'return self.size, self.aggregator')}), "
        "and the replacement never assigns it"
    )


def test_each_method_reading_a_removed_attribute_is_reported(findings) -> None:
    by = at(findings, "RK303")
    assert sorted(by) == ["RunnerPatch.check", "RunnerPatch.check_again"]  # mode still exists
    assert [f.plugin.line for f in by["RunnerPatch.check_again"]] == [
        line_of(PLUGIN, "return self.flag and self.mode")
    ]


def test_removed_override_target_is_reported_on_the_override_and_the_alias(findings) -> None:
    (override,) = at(findings, "RK203")["RunnerPatch.from_dict"]
    assert override.message == (
        "RunnerPatch.from_dict replaced vllm.runner.Runner.from_dict in 1.0.0; "
        "vllm.runner.Runner no longer has from_dict"
    )
    assert sorted(at(findings, "RK220")) == ["RunnerPatch._orig_from_dict"]
    assert sorted(at(findings, "RK203")) == ["RunnerPatch.from_dict"]  # step etc. still exist


def test_changed_default_the_override_still_pins_is_named(findings) -> None:
    by = {f.plugin.symbol + ":" + f.details["param"]: f for f in findings if f.code == "RK215"}
    assert sorted(by) == ["RunnerPatch.capture:mode", "RunnerPatch.capture:size"]
    kept = by["RunnerPatch.capture:mode"]
    assert kept.message.endswith(
        "; the override re-declares upstream's old default 'piecewise' (at 1.0.0), so callers "
        "relying on the new default get the old one"
    )
    assert kept.details["old_default"] == "'piecewise'"
    # size=4 is neither upstream's old (8) nor new (16) default: a plain RK215
    assert by["RunnerPatch.capture:size"].details["old_default"] is None
    assert "re-declares" not in by["RunnerPatch.capture:size"].message
