"""Parsed syntax trees of upstream files, shared by the deep checks of one process.

The index keeps only facts, not ASTs (they are too big to cache); the deep checks need
bodies, so they parse the few files they look at here, once per file content.
"""

from __future__ import annotations

import ast

from rebasekit.astutil import parse_text

__all__ = ["find_def", "parse_file", "parse_text"]


def parse_file(tree: object, relpath: str) -> ast.Module | None:
    """Parse one file of an :class:`~rebasekit.upstream.UpstreamTree` (None if absent/broken)."""
    try:
        text = tree.read_text(relpath)  # type: ignore[attr-defined]
    except (FileNotFoundError, OSError):
        return None
    return parse_text(text)


def find_def(
    module: ast.Module, qualname: str
) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    """The definition ``A.b`` inside a parsed module (last one wins, like Python)."""
    body: list[ast.stmt] = module.body
    found = None
    for part in qualname.split("."):
        found = None
        for node in body:
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.name == part
            ):
                found = node
            elif isinstance(node, ast.If):  # definitions under version/platform guards
                for sub in [*node.body, *node.orelse]:
                    if (
                        isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                        and sub.name == part
                    ):
                        found = found or sub
        if found is None:
            return None
        body = found.body
    return found
