"""Shared pieces of the runbook tests' synthetic plugin projects."""

from __future__ import annotations

import textwrap
from pathlib import Path

# A minimal plugin project: entry point, rebasekit config, an empty plugin package.
PLUGIN_SKELETON = {
    "pyproject.toml": """
        [project]
        name = "plug"
        [project.entry-points."vllm.general_plugins"]
        plug = "plug.plugin:load"
        [tool.rebasekit]
        plugin = "plug"
        patch-bases = ["ArcticPatch"]
    """,
    "plug/__init__.py": "",
    "plug/plugin.py": "def load():\n    pass\n",
}


def write_tree(root: Path, files: dict[str, str]) -> None:
    """Write ``{relative path: dedented text}`` under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
