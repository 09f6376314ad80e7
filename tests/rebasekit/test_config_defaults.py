"""RK313: a plugin class depends on an upstream config field whose value changed by default.

Upstream's config is a tree of dataclasses under ``vllm.config``; a release may change a
field's dataclass default, or the value a ``__post_init__`` assigns it, with no signature
changing. Only defaults count: unconditional assignments and those under ``if <field> is
None:``, of plain values (constants, enum members). A patch reading that field
(``x.compilation_config.level``), or comparing against members of the enum the field
holds, is reported once per class, naming the field, the old and new values and the
upstream place. Fields that kept their values,
changed fields nobody reads and plain plugin functions stay quiet.
"""

from __future__ import annotations

from synth_helpers import line_of, plugin, upstream

from rebasekit.findings import Severity
from rebasekit.scan import scan_plugin

CONFIG = """\
import enum
from dataclasses import dataclass, field
from typing import Optional


class GraphMode(enum.Enum):
    NONE = 0
    PIECEWISE = 1
    FULL = 2


@dataclass
class CompilationConfig:
    level: int = {level}
    sizes: list = field(default_factory=list)
    graph_mode: Optional[GraphMode] = None
    workers: int = 1


@dataclass
class VllmConfig:
    compilation_config: CompilationConfig = field(default_factory=CompilationConfig)
    seed: int = {seed}

    def __post_init__(self):
        if self.compilation_config.graph_mode is None:
            self.compilation_config.graph_mode = GraphMode.{mode}
        if self.seed > 5:
            self.compilation_config.graph_mode = GraphMode.{seeded}
        self.compilation_config.workers = 2
"""
WORKER = """\
class Runner:
    def __init__(self, vllm_config):
        self.compilation_config = vllm_config.compilation_config

    def warm(self):
        return self.compilation_config.workers


class Dispatcher:
    def keys(self, mode):
        return [mode]
"""
PATCHING = """\
from typing import Generic, TypeVar

T = TypeVar("T")


class Patch(Generic[T]):
    pass
"""
PLUGIN = """\
from vllm.config import GraphMode
from vllm.worker import Dispatcher, Runner
from tp.patching import Patch


class RunnerPatch(Patch[Runner]):
    def __init__(self, vllm_config):
        self.sizes = vllm_config.compilation_config.sizes
        self.deep = vllm_config.compilation_config.level > 1

    def warm(self):
        return self.compilation_config.workers * 2


class DispatcherPatch(Patch[Dispatcher]):
    def keys(self, mode):
        if mode == GraphMode.FULL:
            return []
        return [mode]


def outside(vllm_config):
    return vllm_config.compilation_config.level, vllm_config.seed
"""


def rk313(tmp_path, old: dict[str, str], new: dict[str, str]) -> list:
    trees = []
    for name, version, values in (("old", "1.0.0", old), ("new", "1.1.0", new)):
        config = CONFIG.format(**values)
        trees.append(
            upstream(tmp_path / name, version, {"config/__init__.py": config, "worker.py": WORKER})
        )
    pkg = plugin(tmp_path / "plug", {"m.py": PLUGIN, "patching.py": PATCHING})
    result = scan_plugin(str(trees[1]), old=str(trees[0]), plugin=pkg, patch_bases=["Patch"])
    assert result.complete
    return sorted((f for f in result.findings if f.code == "RK313"), key=lambda f: f.plugin.symbol)


SAME = {"level": "0", "mode": "PIECEWISE", "seed": "0", "seeded": "NONE"}


def test_changed_dataclass_default_read_by_a_patch_is_reported(tmp_path) -> None:
    (f,) = rk313(tmp_path, SAME, SAME | {"level": "2"})
    assert f.severity is Severity.WARNING
    assert f.plugin.symbol == "RunnerPatch"
    assert f.plugin.line == line_of(PLUGIN, "self.deep = vllm_config.compilation_config.level > 1")
    assert (f.details["target"], f.details["attribute"]) == (
        "vllm.config.CompilationConfig",
        "level",
    )
    assert (f.details["old_default"], f.details["new_default"]) == ("0", "2")
    assert f.upstream.symbol == "vllm.config.CompilationConfig"
    assert f.message == (
        "RunnerPatch.__init__ reads CompilationConfig.level "
        "(vllm_config.compilation_config.level), whose default changed from 0 to 2 "
        "between 1.0.0 and 1.1.0"
    )


def test_changed_finalised_value_reaches_a_comparison_on_its_enum(tmp_path) -> None:
    (f,) = rk313(tmp_path, SAME, SAME | {"mode": "FULL"})
    assert f.plugin.symbol == "DispatcherPatch"
    assert f.plugin.line == line_of(PLUGIN, "if mode == GraphMode.FULL:")
    assert f.details["attribute"] == "graph_mode"
    assert (f.details["added"], f.details["removed"]) == (
        ["GraphMode.FULL"],
        ["GraphMode.PIECEWISE"],
    )
    assert f.upstream.symbol == "vllm.config.VllmConfig.__post_init__"
    assert f.upstream.line == line_of(CONFIG, "def __post_init__(self):")
    assert "assigned in vllm.config.VllmConfig.__post_init__ now includes GraphMode.FULL" in (
        f.message
    )


def test_unchanged_fields_and_unread_changes_stay_quiet(tmp_path) -> None:
    # seed changed, but only a plain plugin function reads it; workers is read but unchanged
    assert rk313(tmp_path, SAME, SAME | {"seed": "1"}) == []
    assert rk313(tmp_path / "same", SAME, SAME) == []


def test_a_value_set_only_under_another_setting_is_not_a_default(tmp_path) -> None:
    # ``if self.seed > 5: graph_mode = ...`` depends on the user's seed, not on a default
    assert rk313(tmp_path, SAME, SAME | {"seeded": "FULL"}) == []
