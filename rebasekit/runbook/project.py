"""Facts about the project the runbook is for, read from its settings and git."""

from __future__ import annotations

from pathlib import Path

import git

from rebasekit.errors import InputError
from rebasekit.gitref import verify_commit
from rebasekit.settings import ProjectSettings


def plugin_name(project: ProjectSettings, explicit: str | None) -> str:
    """The plugin's import name: ``--plugin``, else the project's declared or entry-point plugin."""
    name = explicit or project.plugin
    if not name:
        raise InputError(
            f"no plugin package named in {project.root}",
            hint='pass --plugin NAME, set [tool.rebasekit] plugin = "NAME", or declare a vllm.general_plugins entry point',
        )
    return name


def plugin_folder(project: ProjectSettings, name: str) -> Path | None:
    """The package folder of plugin ``name`` in the project (flat or ``src/`` layout)."""
    for base in (project.root, project.root / "src"):
        folder = base / name.replace(".", "/")
        if (folder / "__init__.py").is_file():
            return folder
    return None


def entry_point(project: ProjectSettings) -> str | None:
    """``name=module:attr`` of the first ``vllm.general_plugins`` entry point, if any."""
    if not project.entry_points:
        return None
    name, target = project.entry_points[0]
    return f"{name}={target}"


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
