"""Probes that read a parsed Python file instead of its text.

A regex over source breaks the day someone reformats a signature over three lines; the
AST does not. Each function here takes a parsed module and a dotted name and returns the
normalised source (``ast.unparse``) of what it asks about, or None when it is absent, so
two snapshots that differ only in layout give equal values.
"""

from __future__ import annotations

import ast

from rebasekit.astutil import dotted
from rebasekit.index.visitor import signature_of


def _children(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """Definitions and assignments of one block; the last binding of a name wins."""
    found: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node
    return found


def find(tree: ast.Module, dotted: str) -> ast.stmt | None:
    """The statement binding ``A.B.c`` (classes nest; functions end the walk)."""
    node: ast.stmt | ast.Module = tree
    for part in dotted.split("."):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or (node is not tree and not isinstance(node, ast.ClassDef)):
            return None
        child = _children(body).get(part)
        if child is None:
            return None
        node = child
    return node if node is not tree else None


def signature(tree: ast.Module, dotted: str) -> str | None:
    """``name(args) -> ret`` of a function or method, decorators and body left out.

    Rendered by the code index's :class:`Signature` so the ledger and the drift checks
    print one signature the same way.
    """
    node = find(tree, dotted)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    prefix = "async " if isinstance(node, ast.AsyncFunctionDef) else ""
    return f"{prefix}{node.name}{signature_of(node).render()}"


def _own_returns(func: ast.AST) -> list[ast.Return]:
    """Return statements of ``func`` itself, not of functions or classes nested in it."""
    found: list[ast.Return] = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Return):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda r: (r.lineno, r.col_offset))


def return_expression(tree: ast.Module, dotted: str) -> str | None:
    """What a function returns; several ``return`` statements are joined with `` | ``."""
    node = find(tree, dotted)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    values = [ast.unparse(r.value) if r.value is not None else "None" for r in _own_returns(node)]
    return " | ".join(values) if values else None


def constant(tree: ast.Module, dotted: str) -> str | None:
    """Source of the value bound to a module- or class-level name."""
    node = find(tree, dotted)
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        return ast.unparse(node.value)
    return None


def contains_call(tree: ast.Module, name: str) -> bool:
    """Whether any call's callee is ``name`` or ends in ``.name`` (``os.environ.get``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = dotted(node.func)
            if callee and (callee == name or callee.endswith("." + name)):
                return True
    return False
