"""Find the plugin folder and its patch-base names when the user did not say.

The default plugin is the one named by ``[tool.rebasekit] plugin`` in the nearest
``pyproject.toml`` (searched upward from the working directory, then from rebasekit's
own install location), else the plugin that ships in rebasekit's own distribution
(``arctic_inference``), so an installed rebasekit analyses it from any folder.
``patch-bases`` comes from the plugin project's pyproject, or from a ``rebasekit.toml``
inside the plugin package (how an installed plugin, which has no pyproject, declares it).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 needs the tomli backport (same API)
    import tomli as tomllib

from rebasekit.errors import InputError, PluginError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with the tomli backport (same API)
    import tomli as tomllib

# The plugin distributed together with rebasekit: the default when no project says otherwise.
BUNDLED_PLUGIN = "arctic_inference"


def find_pyproject(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def rebasekit_config(config_file: Path | None) -> dict:
    """The ``[tool.rebasekit]`` table of a pyproject.toml or a package's rebasekit.toml.

    A file that exists but is not valid TOML is an input error: falling back to defaults
    would silently analyse another plugin or no patches at all.
    """
    if config_file is None or not config_file.exists():
        return {}
    try:
        data = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(
            f"{config_file} is not valid TOML ({exc})", hint=f"fix the syntax of {config_file.name}"
        ) from None
    tool = data.get("tool", {})
    table = tool.get("rebasekit", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise InputError(
            f"{config_file}: tool.rebasekit is not a table", hint="write it as [tool.rebasekit]"
        )
    return table


def default_plugin_dir() -> Path:
    """The configured plugin package folder of the project we run in."""
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        pyproject = find_pyproject(start)
        name = rebasekit_config(pyproject).get("plugin")
        if pyproject is not None and name:
            if not isinstance(name, str):
                raise InputError(
                    f"{pyproject}: [tool.rebasekit] plugin must be a string, not {name!r}",
                    hint='write plugin = "package_name"',
                )
            folder = pyproject.parent / name.replace(".", "/")
            if (folder / "__init__.py").is_file():
                return folder
            raise PluginError(
                f"{pyproject} names plugin {name!r}, but {folder} is not a Python package",
                hint="fix [tool.rebasekit] plugin, or pass --plugin PATH",
            )
    bundled = _installed_package_dir(BUNDLED_PLUGIN)
    if bundled is not None:
        return bundled
    raise PluginError(
        'no plugin given and no [tool.rebasekit] plugin = "..." found in a pyproject.toml',
        hint="pass --plugin PATH (the plugin's package folder)",
    )


def _installed_package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder if (folder / "__init__.py").is_file() else None


def check_plugin_dir(path: Path) -> Path:
    path = path.expanduser()
    if not path.exists():
        raise PluginError(
            f"plugin folder {path} does not exist",
            hint="pass --plugin PATH to the plugin's package folder",
        )
    if not path.is_dir() or not (path / "__init__.py").is_file():
        raise PluginError(
            f"{path} is not a Python package folder (no __init__.py)",
            hint="point --plugin at the folder that holds the plugin's __init__.py",
        )
    return path.resolve()


def configured_patch_bases(plugin_dir: Path) -> tuple[str, ...]:
    """``[tool.rebasekit] patch-bases`` of the plugin's project (or its package's
    ``rebasekit.toml``), if any."""
    value = rebasekit_config(find_pyproject(plugin_dir)).get("patch-bases")
    if value is None:
        value = rebasekit_config(plugin_dir / "rebasekit.toml").get("patch-bases")
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InputError(
        f"patch-bases must be a class name or a list of them, not {value!r}",
        hint='write patch-bases = ["ArcticPatch"] in [tool.rebasekit] (or rebasekit.toml)',
    )
