"""Few-line plugins reproducing the false findings seen on real plugins, scanned at the pin.

Each folder under ``fixtures_real/`` holds a tiny upstream tree and a plugin written the
way a real plugin from the package registry writes it; scanned against that upstream,
the correct answer is "no findings". Next to most, a one-line variant that really is
broken must still be reported, so a check switched off cannot pass for a fixed one.
A pattern not yet handled is marked ``pytest.mark.xfail(strict=True, reason=...)``, so
the marker has to go once it is fixed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cli_runner import invoke

from rebasekit.cli import app

FIXTURES = Path(__file__).parent / "fixtures_real"


def scan(case: str | Path) -> tuple[int, dict]:
    root = case if isinstance(case, Path) else FIXTURES / case
    res = invoke(
        app,
        ["scan", "--plugin", root / "plugin" / "plug", "--vllm", root / "upstream", "--json"],
    )
    return res.exit_code, json.loads(res.stdout)


def assert_clean(case: str) -> None:
    code, report = scan(case)
    messages = [f"{f['code']} {f['message']}" for f in report["findings"]]
    assert report["complete"], report["degradations"]
    assert (code, messages) == (0, [])


def test_alias_called_through_self_is_a_bound_call():
    assert_clean("bound_alias")


def test_alias_called_through_self_still_checks_the_arguments(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "bound_alias", case)
    patches = case / "plugin" / "plug" / "patches.py"
    patches.write_text(patches.read_text().replace("level=level", "depth=level"))
    code, report = scan(case)
    assert code == 1
    assert [(f["code"], f["plugin"]["line"]) for f in report["findings"]] == [("RK301", 11)]
    assert "depth" in report["findings"][0]["message"]


def test_fields_of_the_class_new_returns_are_provided():
    assert_clean("plugin_attributes")


def test_names_a_module_patch_adds_are_importable():
    assert_clean("module_patch_names")


def test_staticmethod_first_parameter_is_not_self():
    assert_clean("staticmethod_first_param")


def test_wrapped_function_under_a_classmethod_is_an_alias():
    assert_clean("dict_wrapped_alias")


def test_version_gated_branch_for_another_pin_is_not_scanned():
    assert_clean("version_gated_branch")


def test_overloaded_function_binds_against_the_implementation():
    assert_clean("overload_signature")


def test_overloaded_function_still_rejects_a_keyword_the_implementation_lacks(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "overload_signature", case)
    patches = case / "plugin" / "plug" / "patches.py"
    patches.write_text(patches.read_text().replace("config(config=", "config(options="))
    code, report = scan(case)
    assert code == 1
    assert [(f["code"], f["plugin"]["line"]) for f in report["findings"]] == [("RK301", 10)]
    assert "options" in report["findings"][0]["message"]


def test_a_name_no_module_patch_adds_is_still_missing(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "module_patch_names", case)
    user = case / "plugin" / "plug" / "user.py"
    user.write_text(user.read_text().replace("_SP", "_XP"))
    code, report = scan(case)
    assert code == 1
    assert [(f["code"], f["plugin"]["path"]) for f in report["findings"]] == [
        ("RK102", "plug/user.py")
    ]


def test_wrapped_alias_of_a_method_upstream_removed_is_reported(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "dict_wrapped_alias", case)
    args = case / "upstream" / "vllm" / "args.py"
    args.write_text(args.read_text().replace("from_cli_args", "from_args"))
    code, report = scan(case)
    assert code == 1
    rk220 = [f for f in report["findings"] if f["code"] == "RK220"]
    assert len(rk220) == 1 and "from_cli_args" in rk220[0]["message"]


def test_version_gated_branch_for_the_scanned_release_is_checked(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "version_gated_branch", case)
    (case / "upstream" / "vllm" / "version.py").write_text('__version__ = "0.24.0"\n')
    code, report = scan(case)
    assert code == 1
    assert [(f["code"], f["plugin"]["line"]) for f in report["findings"]] == [("RK101", 8)]


def test_field_no_constructed_class_has_is_still_reported(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "plugin_attributes", case)
    patches = case / "plugin" / "plug" / "patches.py"
    patches.write_text(patches.read_text().replace("self.ulysses_size > 1", "self.ring_size > 1"))
    code, report = scan(case)
    assert code == 1
    assert [(f["code"], f["details"]["subject"]) for f in report["findings"]] == [
        ("RK303", "vllm.args.EngineArgs.ring_size")
    ]


def test_overload_stubs_without_an_implementation_bind_as_their_union():
    """``pick`` has two ``@overload`` stubs and no implementation (a stub-only surface):
    ``pick("mode", default=1)`` matches the second; the first alone would refuse it."""
    assert_clean("overload_stubs_only")


def test_overload_union_still_rejects_a_keyword_no_overload_takes(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "overload_stubs_only", case)
    patches = case / "plugin" / "plug" / "patches.py"
    patches.write_text(patches.read_text().replace("default=1", "fallback=1"))
    code, report = scan(case)
    assert code == 1
    assert [(f["code"], f["plugin"]["line"]) for f in report["findings"]] == [("RK301", 18)]
    assert "fallback" in report["findings"][0]["message"]


def test_overloaded_override_is_compared_through_its_implementation(tmp_path):
    """The patch's own ``step`` has two ``@overload`` stubs; the implementation after them,
    which takes ``y`` as upstream does, is what gets installed. Without ``y`` it must fire."""
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "overload_stubs_only", case)
    patches = case / "plugin" / "plug" / "patches.py"
    text = patches.read_text()
    patches.write_text(
        text.replace("def step(self, x, y=None):", "def step(self, x):").replace(
            "(self, x, y)", "(self, x)"
        )
    )
    code, report = scan(case)
    assert code == 1
    assert [(f["code"], f["plugin"]["line"]) for f in report["findings"]] == [("RK210", 17)]
    assert "'y=None'" in report["findings"][0]["message"]


def test_decorated_surfaces_bind_through_what_the_decorator_keeps():
    """Upstream classes under ``@support_torch_compile`` (bare and called) are constructed
    through their ``__init__``; an upstream function under a ``functools.wraps`` decorator
    keeps its own signature; the patch's ``@timed`` implementation after ``@overload`` stubs
    is the override."""
    assert_clean("decorated_surfaces")


def test_decorated_surfaces_still_report_what_really_does_not_bind(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "decorated_surfaces", case)
    build = case / "plugin" / "plug" / "build.py"
    build.write_text(
        build.read_text()
        .replace("strict=True)", "strict=True, old=1)")
        .replace("Other(vllm_config=cfg)", "Other(cfg)")
    )
    patches = case / "plugin" / "plug" / "patches.py"
    patches.write_text(
        patches.read_text().replace("def step(self, x, y=None):", "def step(self, x):")
    )
    code, report = scan(case)
    assert code == 1
    found = sorted(
        (f["code"], f["plugin"]["path"], f["message"].split(" ")[2]) for f in report["findings"]
    )
    assert [(c, p) for c, p, _ in found] == [
        ("RK210", "plug/patches.py"),
        ("RK301", "plug/build.py"),
        ("RK301", "plug/build.py"),
    ]
    messages = " ".join(f["message"] for f in report["findings"])
    assert "'old'" in messages and "Other" in messages and "'y=None'" in messages


def test_version_gates_hold_for_members_classes_and_calls_at_the_scanned_release():
    """At 0.23.0 only the ``vllm_version_is("0.23.0")`` branches run: the ``step`` twin,
    the ``build`` call with ``device``; ``ResetPatch`` exists only before 0.23.0."""
    assert_clean("version_gated_checks")


def test_version_gates_check_the_other_branches_at_an_older_release(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "version_gated_checks", case)
    (case / "upstream" / "vllm" / "version.py").write_text('__version__ = "0.22.0"\n')
    code, report = scan(case)
    assert code == 1
    assert sorted((f["code"], f["plugin"]["line"]) for f in report["findings"]) == [
        ("RK210", 19),  # the pre-0.23.0 step twin lacks mode
        ("RK211", 28),  # ResetPatch runs before 0.23.0
        ("RK301", 20),
        ("RK301", 29),
        ("RK301", 36),  # build("m") without device, the else branch
    ]


def _scan_json(case: Path, *more: str) -> tuple[int, dict]:
    res = invoke(
        app,
        [
            "scan",
            "--plugin",
            case / "plugin" / "plug",
            "--vllm",
            case / "upstream",
            "--json",
            *more,
        ],
    )
    return res.exit_code, json.loads(res.stdout)


def _legacy_tree(tmp_path: Path, runner: str) -> Path:
    """A vLLM 0.1.0 tree for the fixture's legacy sub-package, with ``runner`` as runner.py."""
    tree = tmp_path / "vllm-0.1.0"
    (tree / "vllm").mkdir(parents=True)
    (tree / "vllm" / "__init__.py").write_text("")
    (tree / "vllm" / "version.py").write_text('__version__ = "0.1.0"\n')
    (tree / "vllm" / "runner.py").write_text(runner)
    return tree


def test_a_subpackage_with_its_own_pin_is_scanned_against_that_pin(tmp_path):
    """``plug/legacy`` has its own extra pinning vllm==0.1.0. Scanned at 0.2.0 its import of
    ``OldRunner`` (gone in 0.2.0) is not a finding; against its own 0.1.0 tree it is
    checked there: clean where 0.1.0 has the name, a finding where it does not."""
    good = _legacy_tree(
        tmp_path / "good", "class OldRunner:\n    def step(self, x):\n        return x\n"
    )
    code, report = _scan_json(FIXTURES / "subpackage_pin", "--pin-tree", f"0.1.0={good}")
    assert (code, report["findings"], report["degradations"]) == (0, [], [])
    assert [(o["role"], o["reason"]) for o in report["upstream"]["origins"]][-1] == (
        "subpackage",
        "own pin of plug/legacy",
    )
    bad = _legacy_tree(tmp_path / "bad", "class Runner:\n    pass\n")
    code, report = _scan_json(FIXTURES / "subpackage_pin", "--pin-tree", f"0.1.0={bad}")
    assert code == 1
    assert [(f["code"], f["plugin"]["path"]) for f in report["findings"]] == [
        ("RK102", "plug/legacy/service.py")
    ]


def test_a_subpackage_whose_pin_tree_cannot_be_opened_makes_the_scan_incomplete(tmp_path):
    code, report = _scan_json(
        FIXTURES / "subpackage_pin", "--pin-tree", f"0.1.0={tmp_path / 'missing'}"
    )
    assert code == 2
    assert report["findings"] == []
    assert [(d["kind"], d["subject"]) for d in report["degradations"]] == [
        ("subpackage-pin-unavailable", "plug/legacy")
    ]
    assert "--pin-tree 0.1.0=DIR" in report["degradations"][0]["fix"]
    code, _ = _scan_json(
        FIXTURES / "subpackage_pin",
        "--pin-tree",
        f"0.1.0={tmp_path / 'missing'}",
        "--allow-incomplete",
    )
    assert code == 0


def test_a_malformed_pin_tree_option_is_bad_input():
    res = invoke(
        app, ["scan", "--vllm", FIXTURES / "subpackage_pin" / "upstream", "--pin-tree", "0.1.0"]
    )
    assert res.exit_code == 2
    assert "is not PIN=SPEC" in res.output


def test_a_subpackage_is_scanned_at_its_own_pin(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "subpackage_pin", case)
    (case / "upstream" / "vllm" / "version.py").write_text('__version__ = "0.1.0"\n')
    code, report = _scan_json(case)
    assert code == 1
    assert report["degradations"] == []
    assert [(f["code"], f["plugin"]["path"]) for f in report["findings"]] == [
        ("RK102", "plug/legacy/service.py")
    ]


def test_a_subpackage_without_its_own_extra_follows_the_main_pin(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "subpackage_pin", case)
    pyproject = case / "plugin" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('legacy = ["vllm==0.1.0"]', ""))
    code, report = _scan_json(case)
    assert code == 1
    assert report["degradations"] == []
    assert [(f["code"], f["plugin"]["path"]) for f in report["findings"]] == [
        ("RK102", "plug/legacy/service.py")
    ]


def test_patches_installed_by_assignment_are_found_and_scan_clean_without_configuration():
    """vllm-ascend's ``vllm_ascend/patch/`` style: no patch class, no [tool.rebasekit]."""
    code, report = scan("assigned_patches")
    assert report["complete"], report["degradations"]
    assert (code, report["findings"]) == (0, [])
    assert report["summary"]["patches"]["by_rule"] == {"assignment": 4}


def test_an_assigned_function_that_lost_a_parameter_is_reported(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "assigned_patches", case)
    parser = case / "plugin" / "plug" / "patch" / "patch_tool_parser.py"
    parser.write_text(
        parser.read_text().replace("(self, request, result_generator)", "(self, request)")
    )
    code, report = scan(case)
    assert code == 1
    assert [(f["code"], f["details"]["param"]) for f in report["findings"]] == [
        ("RK210", "result_generator")
    ]


def test_a_read_of_a_helper_no_patch_adds_is_reported(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "assigned_patches", case)
    (case / "plugin" / "plug" / "patch" / "patch_usage.py").write_text("")
    code, report = scan(case)
    assert code == 1
    assert [(f["code"], f["details"]["attribute"]) for f in report["findings"]] == [
        ("RK303", "_make_usage_info")
    ]


def test_a_call_that_fits_neither_upstream_nor_the_replacement_is_reported(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "assigned_patches", case)
    chunk = case / "plugin" / "plug" / "ops" / "chunk.py"
    chunk.write_text(chunk.read_text().replace(", **options", ""))
    code, report = scan(case)
    assert code == 1
    assert [f["code"] for f in report["findings"]] == ["RK301"]


def _severities(report: dict) -> list[tuple[str, str, int]]:
    return [(f["code"], f["severity"], f["plugin"]["line"]) for f in report["findings"]]


def test_signature_change_with_its_only_caller_replaced_cannot_fail():
    code, report = scan("replaced_caller")
    assert report["complete"], report["degradations"]
    assert _severities(report) == [("RK211", "info", 4)]
    assert (
        "vllm.runner.Runner.execute, which the plugin also replaces"
        in (report["findings"][0]["message"])
    )


def test_signature_change_with_the_caller_left_upstream_is_an_error(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "replaced_caller", case)
    patches = case / "plugin" / "plug" / "patches.py"
    patches.write_text(patches.read_text().replace("Runner.execute = execute\n", ""))
    code, report = scan(case)
    assert code == 1
    assert _severities(report) == [("RK211", "error", 4)]
    assert "cannot fail" not in report["findings"][0]["message"]


def test_renamed_parameter_that_upstream_passes_by_position_cannot_fail():
    code, report = scan("positional_rename")
    assert _severities(report) == [("RK212", "info", 4)]
    assert "vllm/ops.py:6" in report["findings"][0]["message"]


def test_renamed_parameter_that_upstream_passes_by_keyword_is_an_error(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "positional_rename", case)
    ops = case / "upstream" / "vllm" / "ops.py"
    ops.write_text(
        ops.read_text().replace(
            "apply(logits, mapping,", "apply(logits, expanded_mapping=mapping, scale="
        )
    )
    code, report = scan(case)
    assert code == 1
    assert _severities(report) == [("RK212", "error", 4)]


def test_base_class_caller_shadowed_on_the_patched_class_cannot_fail():
    code, report = scan("shadowed_base_caller")
    assert _severities(report) == [("RK211", "info", 4)]
    assert "vllm.parsers.BaseParser.run" in report["findings"][0]["message"]


def test_base_class_caller_not_shadowed_is_an_error(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "shadowed_base_caller", case)
    patches = case / "plugin" / "plug" / "patches.py"
    patches.write_text(patches.read_text().replace("Parser.run = run\n", ""))
    code, report = scan(case)
    assert code == 1
    assert _severities(report) == [("RK211", "error", 4)]


def test_keyword_from_an_upstream_caller_the_plugin_replaces_is_not_reported():
    code, report = scan("replaced_keyword_caller")
    assert [f["code"] for f in report["findings"]] == ["RK210"]
    assert report["findings"][0]["severity"] == "warning"  # dtype has a default


def test_keyword_from_an_upstream_caller_left_in_place_is_an_error(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "replaced_keyword_caller", case)
    patches = case / "plugin" / "plug" / "patches.py"
    patches.write_text(patches.read_text().replace("def block_dim(", "def other_dim("))
    code, report = scan(case)
    assert code == 1
    rk217 = [f for f in report["findings"] if f["code"] == "RK217"]
    assert [(f["severity"], f["plugin"]["line"]) for f in rk217] == [("error", 7)]
    assert "vllm/backend.py:6" in rk217[0]["message"]


def _edited(tmp_path: Path, case: str, relpath: str, old: str, new: str) -> Path:
    """A copy of fixture ``case`` with ``old`` replaced by ``new`` in one file.

    ``relpath`` is under the plugin package, or under the tree when it starts ``vllm/``.
    """
    root = tmp_path / "case"
    shutil.copytree(FIXTURES / case, root)
    side = root / "upstream" if relpath.startswith("vllm/") else root / "plugin" / "plug"
    path = side / relpath
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    return root


def _by_code(report: dict, code: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == code]


def test_keyword_caller_reached_only_from_a_worker_the_plugin_swaps_cannot_fail():
    code, report = scan("config_built_caller")
    assert report["complete"], report["degradations"]
    rk217 = _by_code(report, "RK217")
    assert [(f["severity"], f["plugin"]["line"]) for f in rk217] == [("info", 8)]
    message = rk217[0]["message"]
    assert "never runs" in message
    assert "Zeroer.init_meta" in message
    assert "`.worker_cls`" in message
    assert code == 1  # the RK210 warning on the dropped dtype parameter stays


def test_keyword_caller_reached_from_the_worker_upstream_still_builds_is_an_error(tmp_path):
    case = _edited(
        tmp_path,
        "config_built_caller",
        "worker.py",
        'config.worker_cls = "plug.worker.PlugWorker"',
        "config.cache = None",
    )
    code, report = scan(case)
    assert code == 1
    assert [f["severity"] for f in _by_code(report, "RK217")] == ["error"]


def test_keyword_caller_the_plugin_calls_itself_is_an_error(tmp_path):
    case = _edited(
        tmp_path,
        "config_built_caller",
        "worker.py",
        "        self.runner = PlugRunner()\n",
        "        self.runner = PlugRunner()\n        self.runner.init_zero(None)\n",
    )
    code, report = scan(case)
    assert code == 1
    assert [f["severity"] for f in _by_code(report, "RK217")] == ["error"]


def test_keyword_caller_reached_from_a_worker_built_under_another_name_is_an_error(tmp_path):
    case = _edited(
        tmp_path,
        "config_built_caller",
        "vllm/platform.py",
        "class GpuPlatform:",
        "from vllm.worker import Worker as GpuWorker\n\nDEFAULT = GpuWorker()\n\n\nclass GpuPlatform:",
    )
    code, report = scan(case)
    assert code == 1
    assert [f["severity"] for f in _by_code(report, "RK217")] == ["error"]


def test_caller_on_a_class_built_only_as_overriding_plugin_subclasses_cannot_fail():
    code, report = scan("subclass_only_instances")
    assert report["complete"], report["degradations"]
    assert _severities(report) == [("RK212", "info", 5)]
    message = report["findings"][0]["message"]
    assert "never run" in message
    assert "PlugSampler" in message and "self.sampler" in message


def test_caller_on_an_overriding_subclass_that_calls_super_is_an_error(tmp_path):
    case = _edited(
        tmp_path,
        "subclass_only_instances",
        "sampler.py",
        "return reject(logits, 0.5)",
        "return super().forward(logits)",
    )
    code, report = scan(case)
    assert code == 1
    assert _severities(report) == [("RK212", "error", 5)]


def test_caller_on_a_class_the_plugin_runner_keeps_is_an_error(tmp_path):
    case = _edited(
        tmp_path,
        "subclass_only_instances",
        "sampler.py",
        "            self.sampler = PlugSampler()\n",
        "            self.other = PlugSampler()\n",
    )
    code, report = scan(case)
    assert code == 1
    assert _severities(report) == [("RK212", "error", 5)]


def test_self_call_in_a_branch_only_an_overriding_subclass_runs_is_a_warning():
    code, report = scan("branch_dispatch")
    assert report["complete"], report["degradations"]
    assert _severities(report) == [("RK305", "warning", 7)]
    message = report["findings"][0]["message"]
    assert "'fast'" in message and "PlugFastProposer" in message
    assert code == 1


def test_self_call_in_a_branch_another_subclass_may_run_is_an_error(tmp_path):
    case = _edited(
        tmp_path,
        "branch_dispatch",
        "proposers.py",
        "return PlugFastProposer(method)",
        "return PlugSlowProposer(method)",
    )
    code, report = scan(case)
    assert code == 1
    assert _severities(report) == [("RK305", "error", 7)]
