"""One settings model: every configuration file read and validated one way.

Bad settings are bad input (exit 2, one line naming file and key, a hint with the fix);
the plugin package is the entry point's when no ``plugin`` key says otherwise, from
pyproject.toml, setup.cfg or a literal setup.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runner import StrictRunner

from rebasekit.cli import app
from rebasekit.errors import SettingsError
from rebasekit.settings import load_project, settings_from_pyproject_text

FIX = Path(__file__).parent / "fixtures"
NEW = str(FIX / "upstream_new")
ENTRY = '[project.entry-points."vllm.general_plugins"]\nmine = "tinyplug.good:register"\n'


def run(*args: object):
    return StrictRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "400"})


@pytest.fixture
def project(tmp_path) -> Path:
    dest = tmp_path / "proj"
    shutil.copytree(FIX / "plugin", dest)
    return dest


@pytest.mark.parametrize(
    ("table", "message", "hint"),
    [
        ("plugin = 3", "[tool.rebasekit] plugin: expected `str`, got `int`", 'plugin = "'),
        (
            'patch-bases = ["A", 2]',
            "[tool.rebasekit] patch-bases: expected `str`",
            "patch-bases = [",
        ),
        ('pluginn = "x"', "[tool.rebasekit] has no key 'pluginn'", "known keys: plugin,"),
        ('plugin = "not-a-name"', "plugin: 'not-a-name' is not a Python import name", 'plugin = "'),
        (
            'forks = { "a.py" = "vllm/a.py" }',
            "forks: a.py = 'vllm/a.py' is not UPSTREAM",
            "forks = {",
        ),
    ],
)
def test_bad_setting_names_file_key_and_fix(project, table, message, hint):
    (project / "pyproject.toml").write_text(f"[tool.rebasekit]\n{table}\n")
    res = run("corpus", "show", "--plugin", project / "tinyplug", "--json")
    assert res.exit_code == 2
    first, second = res.stderr.strip().splitlines()[:2]
    assert str(project / "pyproject.toml") in first and message in first
    assert second.startswith("hint: ") and hint in second


def test_tool_rebasekit_that_is_not_a_table_is_an_error():
    with pytest.raises(SettingsError, match="tool.rebasekit is not a table"):
        settings_from_pyproject_text('[tool]\nrebasekit = "x"\n')


def test_package_rebasekit_toml_is_validated_too(project):
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (project / "tinyplug" / "rebasekit.toml").write_text("[tool.rebasekit]\npatch-bases = 1\n")
    res = run("corpus", "show", "--plugin", project / "tinyplug", "--json")
    assert res.exit_code == 2
    assert "rebasekit.toml: [tool.rebasekit] patch-bases" in " ".join(res.stderr.split())


def test_plugin_is_inferred_from_the_pyproject_entry_point(project, monkeypatch):
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n' + ENTRY + '[tool.rebasekit]\npatch-bases = ["Patch"]\n'
    )
    monkeypatch.chdir(project)
    res = run("corpus", "show", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["package"] == "tinyplug"
    assert {p["name"] for p in data["patches"]}  # the configured patch bases were applied


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "setup.cfg",
            "[options.entry_points]\nvllm.general_plugins =\n    mine = tinyplug.good:f\n",
        ),
        (
            "setup.py",
            "from setuptools import setup\nsetup(name='x', entry_points={"
            "'vllm.general_plugins': ['mine = tinyplug.good:f']})\n",
        ),
    ],
)
def test_plugin_is_inferred_from_setup_files(project, name, text):
    (project / "pyproject.toml").unlink()
    (project / name).write_text(text)
    declared = load_project(project)
    assert declared.plugin == "tinyplug"
    assert declared.plugin_dir() == project / "tinyplug"


def test_src_layout_plugin_folder(project):
    (project / "src").mkdir()
    shutil.move(project / "tinyplug", project / "src" / "tinyplug")
    (project / "pyproject.toml").write_text(ENTRY)
    assert load_project(project).plugin_dir() == project / "src" / "tinyplug"


def test_the_plugin_setting_wins_over_the_entry_point(project):
    (project / "pyproject.toml").write_text(ENTRY + '[tool.rebasekit]\nplugin = "other"\n')
    assert load_project(project).plugin == "other"


def test_entry_points_in_several_packages_need_the_setting(project):
    (project / "pyproject.toml").write_text(ENTRY + 'two = "otherpkg.boot:f"\n')
    with pytest.raises(SettingsError, match=r"several packages \(otherpkg, tinyplug\)"):
        _ = load_project(project).plugin


def test_a_computed_setup_py_declares_nothing(project):
    (project / "pyproject.toml").unlink()
    (project / "setup.py").write_text("from setuptools import setup\nsetup(entry_points=EPS)\n")
    assert load_project(project).plugin is None


def test_outside_any_project_the_plugin_of_rebasekits_distribution(tmp_path, monkeypatch):
    """An installed (not editable) rebasekit analyses the plugin its own distribution
    registers, found through the installed metadata, not a name written in the tool."""
    from rebasekit.corpus import locate

    site = tmp_path / "site"
    dist = site / "shipper-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shipper\nVersion: 1.0\n")
    (dist / "RECORD").write_text("rebasekit/__init__.py,,\nshipplug/__init__.py,,\n")
    (dist / "entry_points.txt").write_text("[vllm.general_plugins]\nmine = shipplug.boot:f\n")
    (site / "shipplug").mkdir()
    (site / "shipplug" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    # this checkout's own pyproject would win: start both searches outside any project
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(locate, "__file__", str(tmp_path / "rebasekit" / "corpus" / "locate.py"))
    assert locate.default_plugin_dir() == site / "shipplug"
