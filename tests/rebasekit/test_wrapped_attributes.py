"""RK315: a patch reaches into ``self.X``, and upstream now wraps ``self.X`` in another object.

``self.net = Wrapper(self.net)`` on some path at NEW means a patch's ``self.net.forward =
fn`` sets the wrapper's attribute, not the network's. Reads are reported only when the
wrapper cannot hand them on (no ``__getattr__``). The upstream method that unwraps
(``isinstance(self.net, Wrapper)`` and returns the inner object) is named.
"""

from __future__ import annotations

from synth_helpers import line_of, plugin, upstream

from rebasekit.findings import Severity
from rebasekit.scan import scan_plugin

ENGINE_OLD = """\
class Net:
    def forward(self, x):
        return x


class Engine:
    def load(self):
        self.net = Net()
"""
WRAPPER = """\


class Wrapper:
    def __init__(self, inner):
        self.inner = inner
{getattr}

class Engine:
    def load(self):
        self.net = Net()
        if self.fast:
            self.net = Wrapper(self.net)

    def get_net(self):
        if isinstance(self.net, (Wrapper,)):
            return self.net.inner
        return self.net
"""
GETATTR = """
    def __getattr__(self, key):
        return getattr(self.inner, key)
"""
PATCHING = """\
from typing import Generic, TypeVar

T = TypeVar("T")


class Patch(Generic[T]):
    pass
"""
PLUGIN = """\
from vllm.engine import Engine
from tp.patching import Patch


class EnginePatch(Patch[Engine]):
    def hook(self, fn):
        self.net.forward = fn

    def peek(self):
        return self.net.forward

    def keep(self):
        return [self.net]
"""


def engine_new(getattr_: bool) -> str:
    head = ENGINE_OLD.split("\n\n\nclass Engine")[0]
    return head + WRAPPER.format(getattr=GETATTR if getattr_ else "")


def rk315(tmp_path, old: str, new: str) -> list:
    trees = [
        upstream(tmp_path / name, version, {"engine.py": text})
        for name, version, text in (("old", "1.0.0", old), ("new", "1.1.0", new))
    ]
    pkg = plugin(tmp_path / "plug", {"m.py": PLUGIN, "patching.py": PATCHING})
    result = scan_plugin(str(trees[1]), old=str(trees[0]), plugin=pkg, patch_bases=["Patch"])
    assert result.complete
    return sorted((f for f in result.findings if f.code == "RK315"), key=lambda f: f.plugin.line)


def test_setting_an_attribute_of_a_newly_wrapped_object_is_reported(tmp_path) -> None:
    (f,) = rk315(tmp_path, ENGINE_OLD, engine_new(getattr_=True))  # peek's read is handed on
    assert f.severity is Severity.WARNING
    assert f.plugin.symbol == "EnginePatch.hook"
    assert f.plugin.line == line_of(PLUGIN, "self.net.forward = fn")
    assert f.upstream.symbol == "vllm.engine.Engine.get_net"
    assert (f.details["wrapper"], f.details["sets"]) == ("Wrapper", True)
    assert f.message == (
        "EnginePatch.hook sets attributes of self.net (uses .forward); at 1.1.0 Engine may "
        "wrap it (Wrapper(self.net) in Engine.load, not at 1.0.0), so the patch can reach the "
        "Wrapper instead; vllm.engine.Engine.get_net returns the unwrapped object"
    )


def test_reads_a_wrapper_cannot_hand_on_are_reported_too(tmp_path) -> None:
    found = rk315(tmp_path, ENGINE_OLD, engine_new(getattr_=False))
    # keep() passes the object on without reaching into it: quiet
    assert [f.plugin.symbol for f in found] == ["EnginePatch.hook", "EnginePatch.peek"]
    assert found[1].details["sets"] is False


def test_a_wrapper_already_there_at_old_is_not_new(tmp_path) -> None:
    new = engine_new(getattr_=False)
    assert rk315(tmp_path, new, new) == []
    assert rk315(tmp_path / "plain", ENGINE_OLD, ENGINE_OLD) == []
