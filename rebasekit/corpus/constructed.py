"""Names a patched ``__new__`` makes available by constructing a plugin subclass instead.

A plugin that adds fields to an upstream class often patches ``__new__`` so every
instance is really its own subclass::

    @dataclass
    class PlugEngineArgs(EngineArgs, PlugArgs): ...

    class EngineArgsPatch(PlugPatch[EngineArgs]):
        def __new__(cls, *args, **kwargs):
            if cls is EngineArgs:
                return PlugEngineArgs.__new__(PlugEngineArgs, *args, **kwargs)
            ...

Every ``self.X`` the patch reads may then be a field of ``PlugEngineArgs`` or of its bases
in the plugin module. Pure AST over the patch's own module; upstream is never consulted.
"""

from __future__ import annotations

import ast

from rebasekit.astutil import dotted


def _constructed(new: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """``X`` for every ``X.__new__(X, ...)`` or ``object.__new__(X)`` the method calls."""
    out: set[str] = set()
    for node in ast.walk(new):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "__new__"
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            out.add(node.args[0].id)
    return out


def _class_names(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
        elif isinstance(stmt, ast.Assign):
            names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    return names


def constructed_class_names(module: ast.Module, patch: ast.ClassDef) -> set[str]:
    """Class-level names of the plugin classes the patch's ``__new__`` builds (with bases)."""
    new = next(
        (
            f
            for f in patch.body
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "__new__"
        ),
        None,
    )
    if new is None:
        return set()
    classes = {n.name: n for n in module.body if isinstance(n, ast.ClassDef)}
    names: set[str] = set()
    todo, seen = list(_constructed(new) - {patch.name}), set()
    while todo:
        name = todo.pop()
        if name in seen or name not in classes:
            continue
        seen.add(name)
        names |= _class_names(classes[name])
        todo += [b for b in (dotted(base) for base in classes[name].bases) if b]
    return names
