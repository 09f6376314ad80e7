"""A plugin project's configuration as one value, and which package is its vLLM plugin.

The plugin package is ``[tool.rebasekit] plugin`` when set, else the package that the
project's ``vllm.general_plugins`` entry point lives in: what vLLM itself loads. The entry
point is read from ``pyproject.toml``, ``setup.cfg`` or (statically, never executed) from
the ``setup(entry_points=...)`` literal of ``setup.py``.
"""

from __future__ import annotations

import ast
import configparser
from dataclasses import dataclass
from pathlib import Path

from rebasekit.errors import SettingsError
from rebasekit.settings.model import (
    DEFAULT_CONSTANT,
    ProjectTable,
    RebasekitSettings,
    project_table,
    tool_settings,
)
from rebasekit.settings.toml import parse_toml, read_toml

PLUGIN_GROUP = "vllm.general_plugins"
PLATFORM_GROUP = "vllm.platform_plugins"  # functions returning "module.Class" of a Platform
PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
PACKAGE_SETTINGS = "rebasekit.toml"  # how an installed plugin, with no pyproject, declares settings


@dataclass(frozen=True)
class ProjectSettings:
    """What one project folder declares to rebasekit."""

    root: Path
    pyproject: Path | None  # None when the project has no pyproject.toml
    tool: RebasekitSettings
    project: ProjectTable
    entry_points: tuple[tuple[str, str], ...]  # (name, "module:attr") of PLUGIN_GROUP
    platform_points: tuple[tuple[str, str], ...] = ()  # the same, of PLATFORM_GROUP

    @property
    def plugin(self) -> str | None:
        """The plugin's import name: the setting, else its entry point's top-level package."""
        return self.tool.plugin or plugin_of_entry_points(self.entry_points, self.origin)

    @property
    def origin(self) -> str:
        return str(self.pyproject or self.root)

    def plugin_dir(self) -> Path | None:
        """The plugin package folder inside this project (flat or ``src/`` layout)."""
        name = self.plugin
        if not name:
            return None
        for base in (self.root, self.root / "src"):
            folder = base / name.replace(".", "/")
            if (folder / "__init__.py").is_file():
                return folder
        return self.root / name.replace(".", "/")

    def pin_constant(self) -> tuple[str | None, str]:
        """``(file, name)`` of the version constant: the setting, else the entry point's module."""
        if self.tool.pin_constant == "":
            return None, DEFAULT_CONSTANT
        configured = self.tool.constant()
        if configured is not None:
            return configured
        if self.entry_points:
            module = self.entry_points[0][1].partition(":")[0].strip()
            return f"{module.replace('.', '/')}.py", DEFAULT_CONSTANT
        return None, DEFAULT_CONSTANT


def plugin_of_entry_points(entry_points: tuple[tuple[str, str], ...], origin: str) -> str | None:
    packages = sorted({value.split(":")[0].strip().split(".")[0] for _, value in entry_points})
    if len(packages) > 1:
        raise SettingsError(
            f"{origin}: the {PLUGIN_GROUP} entry points live in several packages ({', '.join(packages)})",
            hint='say which one rebasekit analyses: [tool.rebasekit] plugin = "NAME", or --plugin',
        )
    return packages[0] if packages else None


def settings_from_pyproject_text(
    text: str | None, origin: str = "pyproject.toml"
) -> ProjectSettings:
    """Settings from the text of a ``pyproject.toml`` alone (say, at a git commit)."""
    document = parse_toml(text, origin) if text is not None else {}
    return _settings(Path("."), None if text is None else Path(origin), document, origin, ())


def load_project(root: Path) -> ProjectSettings:
    """The settings of the project whose files are in ``root`` (defaults where absent)."""
    pyproject = root / "pyproject.toml"
    document = read_toml(pyproject)
    extra = _setup_cfg_entry_points(root / "setup.cfg") + _setup_py_entry_points(root / "setup.py")
    platform = _setup_cfg_entry_points(root / "setup.cfg", PLATFORM_GROUP) + _setup_py_entry_points(
        root / "setup.py", PLATFORM_GROUP
    )
    return _settings(
        root,
        pyproject if document is not None else None,
        document or {},
        str(pyproject),
        extra,
        platform,
    )


def find_project(start: Path) -> ProjectSettings | None:
    """The settings of the nearest project folder at or above ``start``."""
    for folder in [start, *start.parents]:
        if any((folder / name).is_file() for name in PROJECT_FILES):
            return load_project(folder)
    return None


def package_settings(plugin_dir: Path) -> RebasekitSettings | None:
    """The ``[tool.rebasekit]`` table of the plugin package's own ``rebasekit.toml``."""
    path = plugin_dir / PACKAGE_SETTINGS
    document = read_toml(path)
    return tool_settings(document, str(path)) if document is not None else None


def _settings(
    root: Path,
    pyproject: Path | None,
    document: dict,
    origin: str,
    extra_entry_points: tuple[tuple[str, str], ...],
    extra_platform_points: tuple[tuple[str, str], ...] = (),
) -> ProjectSettings:
    project = project_table(document, origin)
    declared = tuple(project.entry_points.get(PLUGIN_GROUP, {}).items())
    platform = tuple(project.entry_points.get(PLATFORM_GROUP, {}).items())
    return ProjectSettings(
        root=root,
        pyproject=pyproject,
        tool=tool_settings(document, origin),
        project=project,
        entry_points=declared + extra_entry_points,
        platform_points=platform + extra_platform_points,
    )


def _setup_cfg_entry_points(path: Path, group: str = PLUGIN_GROUP) -> tuple[tuple[str, str], ...]:
    if not path.is_file():
        return ()
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        raise SettingsError(
            f"{path} is not a valid setup.cfg ({' '.join(str(exc).split())})",
            hint="fix its syntax",
        ) from None
    text = parser.get("options.entry_points", group, fallback="")
    return _entry_point_lines(text.splitlines())


def _setup_py_entry_points(path: Path, group: str = PLUGIN_GROUP) -> tuple[tuple[str, str], ...]:
    """The plugin entry points of a literal ``setup(entry_points={...})`` call."""
    if not path.is_file():
        return ()
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return ()  # a setup.py rebasekit cannot parse declares nothing it can read
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg != "entry_points":
                continue
            try:
                table = ast.literal_eval(keyword.value)
            except ValueError:
                continue  # computed at build time: not statically known
            lines = table.get(group, ()) if isinstance(table, dict) else ()
            return _entry_point_lines([lines] if isinstance(lines, str) else list(lines))
    return ()


def _entry_point_lines(lines: list) -> tuple[tuple[str, str], ...]:
    out = []
    for line in lines:
        name, sep, value = str(line).partition("=")
        if sep and name.strip() and value.strip():
            out.append((name.strip(), value.strip()))
    return tuple(out)
