"""The ``[tool.rebasekit]`` keys that steer ``compare-pins`` (all optional).

    pin-package     = "vllm"                      # the pinned distribution
    pin-extra       = "vllm"                      # the optional-dependency extra with the pin
    pin-constant    = "arctic_inference/vllm/plugin.py:VLLM_PATCH_VERSION"  # "" disables
    rebase-branches = ["rebase/vllm_v*"]          # globs for rebase branches, local or remote
    main-branch     = "main"
    probes          = "probes/evolution_probes.toml"

Without ``pin-constant`` the constant is looked for in ``<plugin>/vllm/plugin.py`` when
``plugin`` is set, since that is where a vLLM plugin's entry point conventionally lives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rebasekit.errors import InputError
from rebasekit.history.pins import PinSource, UnreadablePin, strict_toml

DEFAULT_BRANCH_GLOBS = ("rebase/vllm_v*",)
DEFAULT_PROBES = "probes/evolution_probes.toml"
DEFAULT_CONSTANT = "VLLM_PATCH_VERSION"


@dataclass(frozen=True)
class HistorySettings:
    """Resolved settings: where the pin is declared and which refs become columns."""

    pin: PinSource = field(default_factory=PinSource)
    branch_globs: tuple[str, ...] = DEFAULT_BRANCH_GLOBS
    main_branch: str = "main"
    probes: str = DEFAULT_PROBES


def _string(table: dict, key: str, default: str | None) -> str | None:
    value = table.get(key, default)
    if value is not None and not isinstance(value, str):
        raise InputError(f"[tool.rebasekit] {key} must be a string, got {value!r}")
    return value


def _constant(table: dict) -> tuple[str | None, str]:
    spec = _string(table, "pin-constant", None)
    if spec is None:
        plugin = table.get("plugin")
        if isinstance(plugin, str) and plugin:
            return f"{plugin.replace('.', '/')}/vllm/plugin.py", DEFAULT_CONSTANT
        return None, DEFAULT_CONSTANT
    if spec == "":
        return None, DEFAULT_CONSTANT
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name.isidentifier():
        raise InputError(
            f"[tool.rebasekit] pin-constant {spec!r} is not PATH:NAME",
            hint='write it as "arctic_inference/vllm/plugin.py:VLLM_PATCH_VERSION"',
        )
    return path, name


def settings_from_text(pyproject_text: str | None) -> HistorySettings:
    """Settings from a ``pyproject.toml`` text (defaults for whatever is absent)."""
    try:
        data = strict_toml(pyproject_text or "")
    except UnreadablePin as exc:
        raise InputError(
            f"pyproject.toml is not valid TOML ({exc})", hint="fix the syntax of pyproject.toml"
        ) from None
    tool = data.get("tool", {})
    table = tool.get("rebasekit", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        table = {}
    globs = table.get("rebase-branches", list(DEFAULT_BRANCH_GLOBS))
    if isinstance(globs, str):
        globs = [globs]
    if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
        raise InputError(f"[tool.rebasekit] rebase-branches must be a list of globs, got {globs!r}")
    constant_file, constant_name = _constant(table)
    pin = PinSource(
        package=_string(table, "pin-package", "vllm") or "vllm",
        extra=_string(table, "pin-extra", "vllm") or "vllm",
        constant_file=constant_file,
        constant_name=constant_name,
    )
    return HistorySettings(
        pin=pin,
        branch_globs=tuple(globs),
        main_branch=_string(table, "main-branch", "main") or "main",
        probes=_string(table, "probes", DEFAULT_PROBES) or DEFAULT_PROBES,
    )


def load_settings(repo_root: Path) -> HistorySettings:
    """Settings from the working tree's ``pyproject.toml`` (the config in force today)."""
    path = repo_root / "pyproject.toml"
    return settings_from_text(path.read_text(encoding="utf-8") if path.is_file() else None)
