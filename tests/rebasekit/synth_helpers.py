"""Small synthetic upstream trees and plugins written into ``tmp_path`` by the tests.

Expected line numbers are taken from the fixture text itself (:func:`line_of`), so a test
states what the user should see without repeating the code under test.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

PYPROJECT = '[project]\nname = "tp"\nversion = "0"\n\n[tool.rebasekit]\nplugin = "tp"\n'


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative path -> dedented text) under ``root``; returns ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def upstream(root: Path, version: str, files: dict[str, str]) -> Path:
    """A ``vllm`` source tree of ``version`` with ``files`` under ``vllm/``."""
    return write_tree(
        root,
        {"vllm/__init__.py": f'__version__ = "{version}"\n'}
        | {f"vllm/{rel}": text for rel, text in files.items()},
    )


def plugin(root: Path, files: dict[str, str]) -> Path:
    """A plugin package ``tp`` with ``files`` under ``tp/``; returns the package folder."""
    write_tree(root, {"pyproject.toml": PYPROJECT, "tp/__init__.py": ""})
    write_tree(root, {f"tp/{rel}": text for rel, text in files.items()})
    return root / "tp"


def line_of(text: str, needle: str) -> int:
    """1-based line of the only line of (dedented) ``text`` that reads ``needle`` (stripped),
    or else the only one that contains it."""
    lines = textwrap.dedent(text).splitlines()
    found = [i for i, line in enumerate(lines, 1) if line.strip() == needle]
    found = found or [i for i, line in enumerate(lines, 1) if needle in line]
    assert len(found) == 1, f"{needle!r} is on lines {found}"
    return found[0]
