"""Small ``ast`` helpers shared by the corpus extractor, the deep checks and the probes.

They were written three times over (one per layer); one copy keeps their behaviour
identical everywhere, and the parse cache shared by all of them means a file that
several checks look at is parsed once per process.
"""

from __future__ import annotations

import ast
import hashlib
from functools import lru_cache

from rebasekit import pyparse


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, None for anything else (calls, subscripts)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


@lru_cache(maxsize=512)
def _parse(digest: str, text: str) -> ast.Module | None:
    try:
        return pyparse.parse(text)
    except (SyntaxError, ValueError):
        return None


def parse_text(text: str) -> ast.Module | None:
    """Parse ``text`` (cached by content; callers must not mutate the tree); None if broken."""
    return _parse(hashlib.sha1(text.encode()).hexdigest(), text)
