"""Patch discovery with no configuration: each rule on a few-line plugin, firing and not.

Every plugin here is scanned against a tiny upstream tree written next to it, through
the CLI as a user runs it; the rule that found each patch is read from the corpus and
the counts from the report, never copied from the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import invoke
from runbook_project import write_tree

from rebasekit.cli import app
from rebasekit.corpus import extract_corpus

UPSTREAM = {
    "vllm/__init__.py": "",
    "vllm/version.py": '__version__ = "0.1.0"\n',
    "vllm/worker.py": """
        class Worker:
            def sleep(self, level: int = 1) -> None:
                self.depth = level

            @staticmethod
            def run(*args, rank: int = 0, **kwargs):
                pass


        def helper(x: int) -> int:
            return x
    """,
    "vllm/custom_op.py": """
        class CustomOp:
            @classmethod
            def register_oot(cls, _decorated_op_cls=None, name=None):
                return lambda c: c

            def forward(self, x):
                return x


        class RMSNorm(CustomOp):
            def forward(self, x, residual=None):
                return x
    """,
}

COPYING_BASE = """
    class Patch:
        @classmethod
        def __class_getitem__(cls, target):
            return type("Bound", (cls,), {"_target": target})

        @classmethod
        def apply(cls):
            for name, attr in vars(cls).items():
                setattr(cls._target, name, attr)
"""

MARKER_BASE = """
    from typing import Generic, TypeVar

    T = TypeVar("T")


    class Patch(Generic[T]):
        \"\"\"Subscripted, but copies nothing: a marker only.\"\"\"
"""


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    write_tree(tmp_path / "upstream", UPSTREAM)
    write_tree(tmp_path / "plugin", {"plug/__init__.py": "", **files})
    return tmp_path


def scan(root: Path, *extra: str) -> tuple[int, dict]:
    res = invoke(
        app,
        [
            "scan",
            "--plugin",
            root / "plugin" / "plug",
            "--vllm",
            root / "upstream",
            "--json",
            *extra,
        ],
    )
    return res.exit_code, json.loads(res.stdout)


def rules(root: Path, bases: tuple[str, ...] = ()) -> list[tuple[str, str, str | None]]:
    corpus = extract_corpus(root / "plugin" / "plug", bases)
    return sorted((p.rule, p.name, p.target) for p in corpus.patches)


def codes(report: dict) -> list[tuple[str, str]]:
    return sorted(
        (f["code"], f["details"].get("param") or f["details"].get("attr", ""))
        for f in report["findings"]
    )


# -- generic base ------------------------------------------------------------------------
PATCHES = """
    from vllm.worker import Worker

    from plug.patching import Patch


    class WorkerPatch(Patch[Worker]):
        def sleep(self, depth: int = 1) -> None:
            pass
"""


def test_subclass_of_a_copying_generic_base_is_a_patch(tmp_path):
    root = project(tmp_path, {"plug/patching.py": COPYING_BASE, "plug/patches.py": PATCHES})
    assert rules(root) == [("generic-base", "WorkerPatch", "vllm.worker.Worker")]
    code, report = scan(root)
    assert code == 1
    assert ("RK212", "level") in codes(report)  # the signature check ran on the found patch
    assert report["summary"]["patches"]["by_rule"] == {"generic-base": 1}


def test_a_marker_base_that_copies_nothing_is_no_patch_base_and_the_scan_says_so(tmp_path):
    root = project(tmp_path, {"plug/patching.py": MARKER_BASE, "plug/patches.py": PATCHES})
    assert rules(root) == []
    code, report = scan(root)
    assert code == 2 and not report["complete"]
    (problem,) = report["degradations"]
    assert problem["kind"] == "no-patches-found"
    assert "likely patch bases: Patch" in problem["message"]
    assert "--patch-base Patch" in problem["fix"]


def test_a_copying_base_subscripted_with_a_plugin_class_is_not_a_patch(tmp_path):
    own = PATCHES.replace("from vllm.worker import Worker\n", "class Worker:\n    pass\n")
    root = project(tmp_path, {"plug/patching.py": COPYING_BASE, "plug/patches.py": own})
    assert rules(root) == []


def test_configured_patch_bases_win_over_discovery(tmp_path):
    root = project(tmp_path, {"plug/patching.py": COPYING_BASE, "plug/patches.py": PATCHES})
    assert rules(root, ("Other",)) == []
    code, report = scan(root, "--patch-base", "Other")
    assert code == 2
    assert [d["kind"] for d in report["degradations"]] == ["patch-bases-unmatched"]
    assert rules(root, ("Patch",)) == [("configured-base", "WorkerPatch", "vllm.worker.Worker")]


# -- _orig_ capture --------------------------------------------------------------------------
def test_class_capturing_orig_from_upstream_is_a_patch(tmp_path):
    root = project(
        tmp_path,
        {
            "plug/sleep.py": """
                from vllm.worker import Worker


                class SleepOverride:
                    _orig_sleep = Worker.sleep

                    def sleep(self, level: int = 1) -> None:
                        SleepOverride._orig_sleep(self, levle=level)
            """
        },
    )
    assert rules(root) == [("orig-capture", "SleepOverride", "vllm.worker.Worker")]
    code, report = scan(root)
    assert code == 1
    assert [f["code"] for f in report["findings"]] == ["RK301"]  # the alias call is checked


def test_class_capturing_from_a_plugin_name_is_not_a_patch(tmp_path):
    root = project(
        tmp_path,
        {
            "plug/sleep.py": """
                class Local:
                    def sleep(self):
                        pass


                class Keeper:
                    _orig_sleep = Local.sleep
            """
        },
    )
    assert rules(root) == []


# -- assignment and setattr ------------------------------------------------------------------
ASSIGNED = """
    import vllm.worker
    from vllm.worker import Worker


    def _sleep(self, depth: int = 1) -> None:
        self.depth = depth


    def _run(*args, rank: int = 0, **kwargs):
        pass


    def _helper(x: int) -> int:
        return x + 1


    def apply():
        setattr(Worker, "run", _run)
        vllm.worker.helper = _helper


    Worker.sleep = _sleep
"""


def test_assignments_and_setattr_onto_upstream_are_patches(tmp_path):
    root = project(tmp_path, {"plug/assigned.py": ASSIGNED})
    corpus = extract_corpus(root / "plugin" / "plug", ())
    found = sorted(
        (p.rule, p.target, a.name, a.installed_at) for p in corpus.patches for a in p.attributes
    )
    assert found == [
        ("assignment", "vllm.worker", "helper", "plug/assigned.py:19"),
        ("assignment", "vllm.worker.Worker", "run", "plug/assigned.py:18"),
        ("assignment", "vllm.worker.Worker", "sleep", "plug/assigned.py:22"),
    ]
    code, report = scan(root)
    # the assigned function is compared with upstream's Worker.sleep; the plain function
    # over the staticmethod run() and the module function match their upstream signatures
    assert code == 1
    assert codes(report) == [("RK212", "level")]
    assert report["findings"][0]["plugin"]["line"] == 5  # the plugin function's def line


def test_assignments_onto_plugin_names_self_and_sys_modules_are_not_patches(tmp_path):
    root = project(
        tmp_path,
        {
            "plug/local.py": """
                import sys

                import vllm.worker


                class Mine:
                    def go(self):
                        self.sleep = print


                def _f():
                    pass


                Mine.go = _f
                sys.modules["vllm.worker"] = vllm.worker
                name = "sleep"
                setattr(vllm.worker.Worker, name, _f)
            """
        },
    )
    assert rules(root) == []


# -- registries ------------------------------------------------------------------------------
def test_registered_subclass_of_an_upstream_class_is_a_patch(tmp_path):
    root = project(
        tmp_path,
        {
            "plug/ops.py": """
                from vllm.custom_op import CustomOp, RMSNorm


                @CustomOp.register_oot(name="RMSNorm")
                class NpuRMSNorm(RMSNorm):
                    def forward(self, x, residual=None, scale=None):
                        return x


                class Unregistered(RMSNorm):
                    pass
            """
        },
    )
    assert rules(root) == [("registry", "NpuRMSNorm", "vllm.custom_op.RMSNorm")]
    code, report = scan(root)
    # the override is compared with the upstream method it overrides: one extra parameter
    assert (code, codes(report)) == (1, [("RK211", "scale")])
    assert report["summary"]["patches"]["by_rule"] == {"registry": 1}


def test_registration_by_module_string_names_the_class(tmp_path):
    root = project(
        tmp_path,
        {
            "plug/models.py": """
                from vllm.worker import Worker


                class FastWorker(Worker):
                    def sleep(self, level: int = 1) -> None:
                        pass
            """,
            "plug/register.py": """
                from vllm.custom_op import CustomOp


                def register():
                    CustomOp.register_oot("plug.models:FastWorker", name="Worker")
            """,
        },
    )
    assert rules(root) == [("registry", "FastWorker", "vllm.worker.Worker")]


def test_a_subclass_passed_to_a_non_registry_call_is_not_a_patch(tmp_path):
    root = project(
        tmp_path,
        {
            "plug/ops.py": """
                from vllm.custom_op import RMSNorm
                from vllm.worker import helper


                class Mine(RMSNorm):
                    pass


                helper(Mine)
            """
        },
    )
    assert rules(root) == []


# -- reporting ------------------------------------------------------------------------------
def test_every_renderer_says_how_many_patches_by_rule(tmp_path):
    root = project(
        tmp_path,
        {
            "plug/patching.py": COPYING_BASE,
            "plug/patches.py": PATCHES,
            "plug/assigned.py": ASSIGNED,
        },
    )
    args = ["scan", "--plugin", root / "plugin" / "plug", "--vllm", root / "upstream"]
    text = invoke(app, args, terminal_width=200).stdout
    # one assignment patch per file and target: Worker and the vllm.worker module
    assert "checked 3 patches (generic-base 1, assignment 2)" in text
    sarif = json.loads(invoke(app, [*args, "--sarif"]).stdout)
    props = sarif["runs"][0]["properties"]["patches"]
    assert props == {"total": 3, "attributes": 4, "by_rule": {"generic-base": 1, "assignment": 2}}


# -- the plugin package from the entry point --------------------------------------------------
@pytest.mark.parametrize(
    "declaration",
    [
        {
            "pyproject.toml": """
                [project]
                name = "plug"
                [project.entry-points."vllm.general_plugins"]
                plug = "plug.plugin:load"
            """
        },
        {
            "setup.py": """
                from setuptools import setup

                setup(
                    name="plug",
                    entry_points={"vllm.general_plugins": ["plug = plug.plugin:load"]},
                )
            """
        },
    ],
    ids=["pyproject", "setup.py"],
)
def test_scan_without_plugin_option_reads_the_entry_point(tmp_path, monkeypatch, declaration):
    root = project(tmp_path, {"plug/assigned.py": ASSIGNED})
    write_tree(root / "plugin", {"plug/plugin.py": "def load():\n    pass\n", **declaration})
    monkeypatch.chdir(root / "plugin")
    res = invoke(app, ["scan", "--vllm", root / "upstream", "--json"])
    report = json.loads(res.stdout)
    assert report["plugin"] == str((root / "plugin" / "plug").resolve())
    assert report["summary"]["patches"]["by_rule"] == {"assignment": 2}


def test_runbook_finds_the_plugin_from_setup_py_and_maps_its_changes_to_tests(tmp_path):
    """No pyproject, no --plugin, a src/ layout, patches installed by assignment."""
    runner = "class Runner:\n    def execute_model(self, batch{}):\n        return batch\n"
    write_tree(tmp_path / "old", {"vllm/__init__.py": "", "vllm/runner.py": runner.format("")})
    write_tree(
        tmp_path / "new",
        {"vllm/__init__.py": "", "vllm/runner.py": runner.format(", intermediate")},
    )
    write_tree(
        tmp_path / "proj",
        {
            "setup.py": """
                from setuptools import setup

                setup(entry_points={"vllm.general_plugins": ["plug = plug.plugin:load"]})
            """,
            "src/plug/__init__.py": "",
            "src/plug/plugin.py": "def load():\n    import plug.runner  # noqa: F401\n",
            "src/plug/runner.py": """
                from vllm.runner import Runner


                def _execute_model(self, batch):
                    return batch


                Runner.execute_model = _execute_model
            """,
            "tests/test_runner.py": """
                from plug.runner import _execute_model


                def test_execute_model():
                    assert _execute_model(None, 1) == 1
            """,
        },
    )
    out = tmp_path / "RB.md"
    res = invoke(
        app,
        ["runbook", "--from", tmp_path / "old", "--to", tmp_path / "new"]
        + ["--project", tmp_path / "proj", "--write", out],
    )
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    rows = [line for line in lines if line.startswith("| RK210")]
    assert len(rows) == 1
    assert "plug/runner.py" in rows[0] and "`tests/test_runner.py`" in rows[0]
    (file_row,) = [line for line in lines if line.startswith("| plug/runner.py |")]
    assert "`tests/test_runner.py` (imports plug.runner)" in file_row


PLATFORM_UPSTREAM = """
    class Platform:
        @classmethod
        def set_forward_context(cls, *args, **kwargs) -> dict:
            return {}

        @classmethod
        def device_name(cls, device_id: int = 0) -> str:
            return ""
"""


def platform_project(tmp_path: Path, returned: str) -> Path:
    root = project(
        tmp_path,
        {
            "plug/__init__.py": f'def register():\n    return "{returned}"\n',
            "plug/platform.py": """
                from vllm.platforms import Platform


                class NpuPlatform(Platform):
                    @classmethod
                    def set_forward_context(cls, attn_metadata, num_tokens: int) -> dict:
                        return {}

                    @classmethod
                    def device_name(cls, index: int = 0) -> str:
                        return "npu"


                class Helper:
                    pass
            """,
        },
    )
    write_tree(root / "upstream", {"vllm/platforms.py": PLATFORM_UPSTREAM})
    write_tree(
        root / "plugin",
        {
            "setup.py": """
                from setuptools import setup

                setup(entry_points={"vllm.platform_plugins": ["npu = plug:register"]})
            """
        },
    )
    return root


def test_a_platform_entry_point_registers_the_platform_class_it_returns(tmp_path):
    code, report = scan(platform_project(tmp_path, "plug.platform.NpuPlatform"))
    assert report["summary"]["patches"]["by_rule"] == {"registry": 1}
    # a base that takes (*args, **kwargs) fixes no parameters; a named one does
    assert (code, codes(report)) == (1, [("RK212", "device_id")])


def test_a_platform_entry_point_returning_a_class_of_no_upstream_base_patches_nothing(tmp_path):
    code, report = scan(platform_project(tmp_path, "plug.platform.Helper"))
    assert report["summary"]["patches"]["total"] == 0
    assert code == 2
