"""Find a plugin's patches with no configuration, from how Python installs them.

A plugin changes upstream in a few statically visible ways, and each is one rule
(:data:`~rebasekit.corpus.models.RULES`):

* ``generic-base``: ``class P(Base[Target])`` where ``Base`` is a class of the plugin that
  copies attributes onto what it is subscripted with (a method calls ``setattr`` with a
  computed name), and ``Target`` is an upstream class or module;
* ``orig-capture``: a class whose body captures ``_orig_x = Target.x`` from upstream;
* ``assignment``: ``Target.x = f`` or ``setattr(Target, "x", f)`` onto an upstream class or
  module, at module level or inside any plugin function (the plugin calls them at load);
* ``registry``: a plugin subclass of an upstream class handed to an upstream ``register*``
  callable (a decorator or a call, the class by name or as a ``"module:Class"`` string),
  or named by the string a ``vllm.platform_plugins`` entry point returns.

Everything here reads syntax trees only; the extractor (:mod:`rebasekit.corpus.extract`)
turns the sites into :class:`~rebasekit.corpus.models.PatchClass` records.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rebasekit.astutil import FuncNode, dotted

Expand = Callable[[str | None, dict[str, str] | None], str | None]
_WRAPPERS = {"staticmethod": "staticmethod", "classmethod": "classmethod", "property": "property"}


def copier_bases(modules: dict[str, ast.Module]) -> frozenset[str]:
    """``module.Class`` of every plugin class with a method that ``setattr``\\ s a computed name.

    That is what a patch base does when it is applied: it copies the subclass's members
    onto its target. ``modules`` maps module names to their syntax trees.
    """
    found: set[str] = set()
    for modname, tree in modules.items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and _copies_attributes(node):
                found.add(f"{modname}.{node.name}")
    return frozenset(found)


def _copies_attributes(node: ast.ClassDef) -> bool:
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Call)
            and dotted(sub.func) == "setattr"
            and len(sub.args) >= 3
            and not isinstance(sub.args[1], ast.Constant)
        ):
            return True
    return False


@dataclass(frozen=True)
class Installed:
    """One ``Target.name = value`` (or ``setattr``) onto an upstream name."""

    target: str  # the upstream name, absolute
    target_expr: str  # as the plugin spells it
    name: str
    lineno: int
    value: ast.expr
    function: FuncNode | None  # the plugin function the value names, when it names one
    kind: str  # method / staticmethod / classmethod / property / attribute
    scope: dict[str, str]  # the import bindings where the assignment is


def installed_attributes(
    tree: ast.Module,
    bindings: dict[str, str],
    function_scopes: dict[int, dict[str, str]],
    expand: Expand,
    is_upstream: Callable[[str], bool],
) -> Iterator[Installed]:
    """Assignments and ``setattr`` calls onto upstream names anywhere in ``tree``."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def visit(body: list[ast.stmt], scope: dict[str, str], defs: dict[str, FuncNode]):
        local = {**defs, **{s.name: s for s in body if isinstance(s, _FUNCS)}}
        for stmt in body:
            yield from _sites(stmt, scope, local, classes, expand, is_upstream)
            if isinstance(stmt, _FUNCS):
                inner = {**scope, **function_scopes.get(id(stmt), {})}
                yield from visit(stmt.body, inner, local)
            elif isinstance(stmt, ast.ClassDef):
                for member in stmt.body:
                    if isinstance(member, _FUNCS):
                        inner = {**scope, **function_scopes.get(id(member), {})}
                        yield from visit(member.body, inner, local)
            else:
                for block in _blocks(stmt):
                    yield from visit(block, scope, local)

    yield from visit(tree.body, bindings, {})


_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        handlers = [h.body for h in stmt.handlers]  # type: ignore[attr-defined]
        return [stmt.body, *handlers, stmt.orelse, stmt.finalbody]  # type: ignore[attr-defined]
    if isinstance(stmt, ast.Match):
        return [case.body for case in stmt.cases]
    return [b for b in (getattr(stmt, "body", None), getattr(stmt, "orelse", None)) if b]


def _sites(
    stmt: ast.stmt,
    scope: dict[str, str],
    defs: dict[str, FuncNode],
    classes: dict[str, ast.ClassDef],
    expand: Expand,
    is_upstream: Callable[[str], bool],
) -> Iterator[Installed]:
    pairs: list[tuple[ast.expr, str, ast.expr]] = []
    if isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            if isinstance(target, ast.Attribute):
                pairs.append((target.value, target.attr, stmt.value))
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        if isinstance(stmt.target, ast.Attribute):
            pairs.append((stmt.target.value, stmt.target.attr, stmt.value))
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        if (
            dotted(call.func) == "setattr"
            and len(call.args) == 3
            and isinstance(call.args[1], ast.Constant)
            and isinstance(call.args[1].value, str)
        ):
            pairs.append((call.args[0], call.args[1].value, call.args[2]))
    for owner, name, value in pairs:
        spelled = dotted(owner)
        target = expand(spelled, scope)
        if spelled is None or target is None or not is_upstream(target):
            continue
        function, kind = _value_function(value, defs, classes)
        yield Installed(target, spelled, name, stmt.lineno, value, function, kind, scope)


def _value_function(
    value: ast.expr, defs: dict[str, FuncNode], classes: dict[str, ast.ClassDef]
) -> tuple[FuncNode | None, str]:
    """The plugin function an assigned value names, and the kind of member it becomes."""
    kind = "method"
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in _WRAPPERS
        and len(value.args) == 1
    ):
        kind, value = _WRAPPERS[value.func.id], value.args[0]
    function: FuncNode | None = None
    if isinstance(value, ast.Name):
        function = defs.get(value.id)
    elif isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
        cls = classes.get(value.value.id)
        members = cls.body if cls is not None else []
        function = next(
            (m for m in members if isinstance(m, _FUNCS) and m.name == value.attr), None
        )
    if function is None:
        return None, "attribute"
    if kind == "method":
        for dec in function.decorator_list:
            name = dotted(dec.func if isinstance(dec, ast.Call) else dec) or ""
            if name in _WRAPPERS:
                kind = _WRAPPERS[name]
    return function, kind


def registered_classes(
    tree: ast.Module,
    scope: dict[str, str],
    expand: Expand,
    is_upstream: Callable[[str], bool],
    modname: str,
) -> Iterator[tuple[str, int]]:
    """``(module.Class, line)`` of each class handed to an upstream ``register*`` callable.

    A class decorated with one (``@CustomOp.register_oot(name=...)``), or passed to one by
    name or as a ``"module:Class"`` / ``"module.Class"`` string
    (``ModelRegistry.register_model("Arch", "pkg.models.x:Cls")``).
    """
    local = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for dec in node.decorator_list:
                callee = dec.func if isinstance(dec, ast.Call) else dec
                if _is_registry(callee, scope, expand, is_upstream):
                    yield f"{modname}.{node.name}", node.lineno
        elif isinstance(node, ast.Call) and _is_registry(node.func, scope, expand, is_upstream):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(arg, ast.Name) and arg.id in local:
                    yield f"{modname}.{arg.id}", node.lineno
                elif isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    text = arg.value.replace(":", ".")
                    if "." in text and " " not in text:
                        yield text, node.lineno


def returned_class_names(function: FuncNode) -> Iterator[tuple[str, int]]:
    """``("module.Class", line)`` for each dotted string a function returns.

    What a ``vllm.platform_plugins`` entry point gives vLLM: the platform class to load.
    """
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Return)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and "." in node.value.value
        ):
            yield node.value.value.replace(":", "."), node.lineno


def _is_registry(
    callee: ast.expr, scope: dict[str, str], expand: Expand, is_upstream: Callable[[str], bool]
) -> bool:
    name = dotted(callee)
    if name is None or not name.rsplit(".", 1)[-1].startswith("register"):
        return False
    full = expand(name, scope)
    return full is not None and is_upstream(full)


def subscripted_bases(node: ast.ClassDef) -> Iterator[tuple[str, ast.Subscript]]:
    """``(Base, subscript)`` for each base written ``Base[...]``."""
    for base in node.bases:
        if isinstance(base, ast.Subscript):
            name = dotted(base.value)
            if name is not None:
                yield name, base
