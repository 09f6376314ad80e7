"""Find the plugin folder and its patch-base names when the user did not say.

The default plugin is the one named by ``[tool.rebasekit] plugin`` in the nearest
``pyproject.toml`` (searched upward from the working directory, then from rebasekit's
own install location). ``patch-bases`` comes from the plugin project's pyproject.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from rebasekit.errors import PluginError


def find_pyproject(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def rebasekit_config(pyproject: Path | None) -> dict:
    if pyproject is None:
        return {}
    try:
        data = tomllib.loads(pyproject.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return data.get("tool", {}).get("rebasekit", {}) or {}


def default_plugin_dir() -> Path:
    """The configured plugin package folder of the project we run in."""
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        pyproject = find_pyproject(start)
        name = rebasekit_config(pyproject).get("plugin")
        if pyproject is not None and name:
            folder = pyproject.parent / name.replace(".", "/")
            if (folder / "__init__.py").is_file():
                return folder
    raise PluginError(
        "no plugin given and no [tool.rebasekit] plugin = \"...\" found in a pyproject.toml",
        hint="pass --plugin PATH (the plugin's package folder)",
    )


def check_plugin_dir(path: Path) -> Path:
    path = path.expanduser()
    if not path.exists():
        raise PluginError(f"plugin folder {path} does not exist", hint="pass --plugin PATH to the plugin's package folder")
    if not path.is_dir() or not (path / "__init__.py").is_file():
        raise PluginError(f"{path} is not a Python package folder (no __init__.py)",
                          hint="point --plugin at the folder that holds the plugin's __init__.py")
    return path.resolve()


def configured_patch_bases(plugin_dir: Path) -> tuple[str, ...]:
    """``[tool.rebasekit] patch-bases`` of the plugin's project, if any."""
    value = rebasekit_config(find_pyproject(plugin_dir)).get("patch-bases")
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    return ()
