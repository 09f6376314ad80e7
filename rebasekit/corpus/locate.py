"""Find the plugin folder and its patch-base names when the user did not say.

The default plugin is the one the nearest project declares (searched upward from the
working directory, then from rebasekit's own install location): ``[tool.rebasekit]
plugin``, else the package of its ``vllm.general_plugins`` entry point. Outside any
project it is the plugin that rebasekit's own distribution registers under that entry
point group, so an installed rebasekit analyses it from any folder.
``patch-bases`` comes from the plugin project's settings, or from a ``rebasekit.toml``
inside the plugin package (how an installed plugin, which has no pyproject, declares it).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from rebasekit.errors import PluginError
from rebasekit.settings import PLUGIN_GROUP, find_project, package_settings
from rebasekit.settings.project import plugin_of_entry_points


def find_pyproject(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def default_plugin_dir() -> Path:
    """The plugin package folder of the project we run in."""
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        project = find_project(start)
        name = project.plugin if project is not None else None
        if project is None or not name:
            continue
        folder = project.plugin_dir()
        if folder is not None and (folder / "__init__.py").is_file():
            return folder
        raise PluginError(
            f"{project.origin} names plugin {name!r}, but {folder} is not a Python package",
            hint="fix [tool.rebasekit] plugin (or the vllm.general_plugins entry point), or pass --plugin PATH",
        )
    shipped = _shipped_plugin()
    if shipped is not None:
        return shipped
    raise PluginError(
        'no plugin given and no [tool.rebasekit] plugin = "..." or vllm.general_plugins '
        "entry point found in a project",
        hint="pass --plugin PATH (the plugin's package folder)",
    )


def _shipped_plugin() -> Path | None:
    """The plugin that the distribution rebasekit is installed from registers, if any."""
    import importlib.metadata  # read only when no project names the plugin

    for dist_name in _distributions_shipping(__name__.split(".")[0]):
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            continue
        points = tuple((ep.name, ep.value) for ep in dist.entry_points if ep.group == PLUGIN_GROUP)
        name = plugin_of_entry_points(points, f"the {dist_name} distribution")
        folder = _installed_package_dir(name) if name else None
        if folder is not None:
            return folder
    return None


def _distributions_shipping(package: str) -> list[str]:
    """Names of the installed distributions that contain the top-level ``package``.

    Python 3.10's ``packages_distributions`` reads only ``top_level.txt``, which modern
    wheels omit; the files a distribution lists (its RECORD) say the same on every version.
    """
    import importlib.metadata

    names = importlib.metadata.packages_distributions().get(package, [])
    if names:
        return list(names)
    return [
        dist.metadata["Name"]
        for dist in importlib.metadata.distributions()
        if any(f.parts and f.parts[0] == package for f in dist.files or ())
    ]


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
    project = find_project(plugin_dir)
    value = project.tool.patch_base_names if project is not None else None
    if value is None:
        own = package_settings(plugin_dir)
        value = own.patch_base_names if own is not None else None
    return value or ()


def declared_subpackage_pins(plugin_dir: Path, upstream_package: str = "vllm") -> dict[str, str]:
    """Sub-packages whose own optional-dependency extra pins the upstream package.

    An extra named like a direct sub-package (``embedding`` for ``pkg/embedding/``) that
    pins ``upstream_package==X`` says that sub-package targets X, whatever the main pin
    extra says. Returns ``"pkg/sub/"`` (relative to the package's parent) -> X.
    """
    project = find_project(plugin_dir)
    if project is None:
        return {}
    found: dict[str, str] = {}
    for extra, items in project.project.optional_dependencies.items():
        if extra == project.tool.pin_extra or not isinstance(items, list):
            continue
        folder = plugin_dir / extra.replace("-", "_").replace(".", "_")
        if not folder.is_dir() or not any(folder.rglob("*.py")):  # namespace packages too
            continue
        pin = exact_pin(items, upstream_package)
        if pin is not None:
            found[f"{plugin_dir.name}/{folder.name}/"] = pin
    return found


def exact_pin(items: list, package: str) -> str | None:
    """``X`` of the first ``package==X`` among PEP 508 strings, if any."""
    wanted = canonicalize_name(package)
    for item in items:
        try:
            req = Requirement(item) if isinstance(item, str) else None
        except InvalidRequirement:
            continue
        if req is None or canonicalize_name(req.name) != wanted:
            continue
        exact = [s.version for s in req.specifier if s.operator in ("==", "===")]
        return exact[0] if len(exact) == 1 and "*" not in exact[0] else None
    return None


def platform_entry_points(plugin_dir: Path) -> tuple[str, ...]:
    """``module:function`` of the project's ``vllm.platform_plugins`` entry points.

    vLLM calls each and loads the ``"module.Class"`` it returns: a registration of a
    platform class, statically visible in the function's ``return`` statement.
    """
    project = find_project(plugin_dir)
    return tuple(value for _, value in project.platform_points) if project is not None else ()


def configured_forks(plugin_root: Path) -> tuple[Path, dict[str, str]] | None:
    """``[tool.rebasekit] forks`` of the project around ``plugin_root`` and the folder its
    paths are relative to; None outside a project with a pyproject.toml."""
    project = find_project(plugin_root)
    if project is None or project.pyproject is None:
        return None
    return project.root, dict(project.tool.forks)


__all__ = [
    "check_plugin_dir",
    "configured_forks",
    "configured_patch_bases",
    "declared_subpackage_pins",
    "default_plugin_dir",
    "find_pyproject",
    "platform_entry_points",
]
