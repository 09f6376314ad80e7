"""rebasekit's settings: one typed model for every configuration file it reads.

IO happens here and in :mod:`rebasekit.settings.toml` only; the model itself
(:mod:`rebasekit.settings.model`) is plain validation.
"""

from rebasekit.settings.model import (
    DEFAULT_BRANCH_GLOBS,
    DEFAULT_CONSTANT,
    DEFAULT_PROBES,
    ProjectTable,
    RebasekitSettings,
    project_table,
    tool_settings,
)
from rebasekit.settings.project import (
    PACKAGE_SETTINGS,
    PLUGIN_GROUP,
    ProjectSettings,
    find_project,
    load_project,
    package_settings,
    settings_from_pyproject_text,
)
from rebasekit.settings.toml import parse_toml, read_toml

__all__ = [
    "DEFAULT_BRANCH_GLOBS",
    "DEFAULT_CONSTANT",
    "DEFAULT_PROBES",
    "PACKAGE_SETTINGS",
    "PLUGIN_GROUP",
    "ProjectSettings",
    "ProjectTable",
    "RebasekitSettings",
    "find_project",
    "load_project",
    "package_settings",
    "parse_toml",
    "project_table",
    "read_toml",
    "settings_from_pyproject_text",
    "tool_settings",
]
