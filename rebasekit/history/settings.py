"""The ``[tool.rebasekit]`` keys that steer ``compare-pins`` (all optional).

    pin-package     = "vllm"                      # the pinned distribution
    pin-extra       = "vllm"                      # the optional-dependency extra with the pin
    pin-constant    = "pkg/module.py:VLLM_PATCH_VERSION"  # "" disables
    rebase-branches = ["rebase/vllm_v*"]          # globs for rebase branches, local or remote
    main-branch     = "main"
    probes          = "probes/evolution_probes.toml"

Without ``pin-constant`` the constant is looked for in the module of the project's
``vllm.general_plugins`` entry point: the module vLLM imports, where a plugin states the
version it targets. Validation is :mod:`rebasekit.settings`'s; this module only shapes
the result for the history miner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rebasekit.history.pins import PinSource
from rebasekit.settings import (
    DEFAULT_BRANCH_GLOBS,
    DEFAULT_PROBES,
    ProjectSettings,
    load_project,
    settings_from_pyproject_text,
)


@dataclass(frozen=True)
class HistorySettings:
    """Resolved settings: where the pin is declared and which refs become columns."""

    pin: PinSource = field(default_factory=PinSource)
    branch_globs: tuple[str, ...] = DEFAULT_BRANCH_GLOBS
    main_branch: str = "main"
    probes: str = DEFAULT_PROBES


def history_settings(project: ProjectSettings) -> HistorySettings:
    tool = project.tool
    constant_file, constant_name = project.pin_constant()
    pin = PinSource(
        package=tool.pin_package,
        extra=tool.pin_extra,
        constant_file=constant_file,
        constant_name=constant_name,
    )
    return HistorySettings(
        pin=pin, branch_globs=tool.branch_globs, main_branch=tool.main_branch, probes=tool.probes
    )


def settings_from_text(pyproject_text: str | None) -> HistorySettings:
    """Settings from a ``pyproject.toml`` text (defaults for whatever is absent)."""
    return history_settings(settings_from_pyproject_text(pyproject_text))


def load_settings(repo_root: Path) -> HistorySettings:
    """Settings from the working tree's project files (the config in force today)."""
    return history_settings(load_project(repo_root))
