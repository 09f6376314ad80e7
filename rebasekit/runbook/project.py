"""Facts about the project the runbook is for, read from its ``pyproject.toml`` and git."""

from __future__ import annotations

from pathlib import Path

import git

from rebasekit.errors import InputError
from rebasekit.gitref import verify_commit
from rebasekit.history.pins import UnreadablePin, strict_toml


def read_pyproject(root: Path) -> dict:
    """The project's pyproject table ({} without one); a broken file is an input error."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        return strict_toml(path.read_text(encoding="utf-8"))
    except (UnreadablePin, UnicodeDecodeError) as exc:
        raise InputError(
            f"{path} is not valid TOML ({exc})", hint="fix the syntax of pyproject.toml"
        ) from None


def plugin_name(data: dict, explicit: str | None) -> str:
    """The plugin's import name: ``--plugin``, else ``[tool.rebasekit] plugin``."""
    name = explicit or data.get("tool", {}).get("rebasekit", {}).get("plugin")
    if not isinstance(name, str) or not name:
        raise InputError(
            "no plugin package named",
            hint='pass --plugin NAME or set [tool.rebasekit] plugin = "NAME"',
        )
    return name


def entry_point(data: dict) -> str | None:
    """``name=module:attr`` of the first ``vllm.general_plugins`` entry point, if any."""
    group = data.get("project", {}).get("entry-points", {}).get("vllm.general_plugins", {})
    if isinstance(group, dict):
        for name, target in group.items():
            if isinstance(target, str):
                return f"{name}={target}"
    return None


def changed_since(root: Path, ref: str, plugin: str) -> list[str]:
    """Plugin ``.py`` files that differ between ``ref`` and the working tree."""
    try:
        repo = git.Repo(root)
        commit = verify_commit(root, ref)  # never let a ref like --output=FILE reach git diff
        out = repo.git.diff("--name-only", commit, "--", plugin.replace(".", "/"))
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.GitCommandError):
        raise InputError(
            f"cannot diff {root} against {ref!r}",
            hint="--changed-since needs a git checkout and an existing ref",
        ) from None
    return [line for line in out.splitlines() if line.endswith(".py")]
