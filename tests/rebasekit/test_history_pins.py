"""Reading the declared pin: the extra via tomllib + packaging, the code constant fallback."""

from __future__ import annotations

import pytest
from history_gitrepo import pyproject

from rebasekit.errors import InputError, SettingsError
from rebasekit.history.pins import (
    PinSource,
    constant_value,
    pin_from_pyproject,
    read_pin,
    version_key,
)
from rebasekit.history.settings import settings_from_text

SOURCE = PinSource(constant_file="plug/plugin.py")


def test_extra_wins_over_comments_and_other_extras():
    text = pyproject("0.26.0", bench="0.20.0", comment="0.99.0")
    assert pin_from_pyproject(text, SOURCE) == "0.26.0"


@pytest.mark.parametrize(
    "entry, expected",
    [
        ("'vllm==0.27.0'", "0.27.0"),
        ('"vllm == 0.27.1"', "0.27.1"),
        ("\"vllm[tensorizer]==0.28.0; python_version >= '3.10'\"", "0.28.0"),
        ('"VLLM===0.9.0.1"', "0.9.0.1"),
        ('"vllm>=0.26"', None),  # not an exact pin
        ('"vllm==0.26.*"', None),
        ('"torch==2.11.0"', None),
    ],
)
def test_requirement_forms(entry, expected):
    text = f"[project.optional-dependencies]\nvllm = [\n  # note\n  {entry},  # trailing\n]\n"
    assert pin_from_pyproject(text, SOURCE) == expected


def test_other_extra_name_is_configurable():
    text = '[project.optional-dependencies]\nvllm = ["vllm==0.1.0"]\nengine = ["vllm==0.27.0"]\n'
    assert pin_from_pyproject(text, PinSource(extra="engine")) == "0.27.0"


def test_invalid_toml_is_an_unreadable_pin_not_no_pin():
    # "no pin" would show the revision as VANISHED in the ledger; its pin is unknown instead
    with pytest.raises(SettingsError, match="line 1"):
        pin_from_pyproject("[project\nvllm==0.26.0", SOURCE)


def test_constant_fallback_when_extra_is_unpinned():
    files = {
        "pyproject.toml": '[project.optional-dependencies]\nvllm = ["vllm>=0.20"]\n',
        "plug/plugin.py": '# VLLM_PATCH_VERSION = "0.1.0"\nVLLM_PATCH_VERSION: str = "0.27.0"\n',
    }
    pin = read_pin(files.get, SOURCE)
    assert pin is not None and (pin.version, pin.origin) == ("0.27.0", "constant")
    files["pyproject.toml"] = pyproject("0.26.0")
    pin = read_pin(files.get, SOURCE)
    assert pin is not None and (pin.version, pin.origin) == ("0.26.0", "extra")


def test_constant_ignores_nested_and_non_string_bindings():
    code = "def f():\n    VLLM_PATCH_VERSION = '9.9'\nVLLM_PATCH_VERSION = (0, 26)\n"
    assert constant_value(code, "VLLM_PATCH_VERSION") is None
    assert constant_value("x = (", "VLLM_PATCH_VERSION") is None


def test_versions_sort_as_versions():
    pins = ["0.10.1", "0.9.0.1", "0.26.0", "0.9.1", "weird", "0.26.0rc1"]
    assert sorted(pins, key=version_key) == [
        "0.9.0.1",
        "0.9.1",
        "0.10.1",
        "0.26.0rc1",
        "0.26.0",
        "weird",
    ]


def test_settings_read_pin_source_and_globs():
    settings = settings_from_text(
        '[tool.rebasekit]\nplugin = "plug"\npin-extra = "engine"\n'
        'pin-constant = "src/p.py:PINNED"\nrebase-branches = ["rb/*"]\n'
    )
    assert settings.pin.extra == "engine"
    assert (settings.pin.constant_file, settings.pin.constant_name) == ("src/p.py", "PINNED")
    assert settings.branch_globs == ("rb/*",)
    derived = settings_from_text(
        '[project.entry-points."vllm.general_plugins"]\nplug = "plug.boot:register"\n'
    )
    assert derived.pin.constant_file == "plug/boot.py"
    assert settings_from_text('[tool.rebasekit]\nplugin = "plug"\n').pin.constant_file is None
    assert settings_from_text('[tool.rebasekit]\npin-constant = ""\n').pin.constant_file is None


@pytest.mark.parametrize(
    "table", ['pin-constant = "nocolon"', "rebase-branches = 3", "pin-extra = 1"]
)
def test_bad_settings_are_input_errors(table):
    key = table.split(" ")[0]
    with pytest.raises(InputError, match=f"pyproject.toml: \\[tool.rebasekit\\] {key}: ") as err:
        settings_from_text(f"[tool.rebasekit]\n{table}\n")
    assert err.value.hint.startswith(f"write {key} = ")


def test_extras_of_the_wrong_shape_are_an_unreadable_pin_not_no_pin():
    with pytest.raises(SettingsError, match="optional-dependencies"):
        pin_from_pyproject('[project]\noptional-dependencies = ["vllm==0.26.0"]\n', SOURCE)
