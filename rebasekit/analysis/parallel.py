"""Parallel implementations: a second class that does the patched class's job.

When upstream adds ``vllm/v1/worker/gpu/model_runner.py:GPUModelRunner`` next to the
patched ``vllm/v1/worker/gpu_model_runner.py:GPUModelRunner`` and a flag picks one, the
patch keeps importing and applying cleanly, yet never runs for configurations that take
the other branch. Nothing fails; features silently vanish. This module finds such
twins and, where it can, the condition that selects them: the ``if`` (or conditional
expression) that imports or names the twin, and what that condition reads (env vars,
config properties, upper-case constants such as architecture lists).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from rebasekit.analysis.shapes import dotted
from rebasekit.astutil import parse_text
from rebasekit.datacodec import record
from rebasekit.index.cache import tree_memo

_MAX_SITES = 5


@record
@dataclass
class Selector:
    """One place that chooses between implementations and what its condition depends on."""

    relpath: str
    line: int
    condition: str
    branch: str  # "if" when the twin is taken when the condition holds, else "else"
    resolved_at: str | None = None  # where the condition's property/attribute is computed
    env_vars: list[str] = field(default_factory=list)
    constants: dict[str, list[str]] = field(default_factory=dict)  # name -> string members
    config_reads: list[str] = field(default_factory=list)  # ``model_config.is_moe`` etc.

    def render(self) -> str:
        text = f"{self.relpath}:{self.line} selects it when `{self.condition}` is {'true' if self.branch == 'if' else 'false'}"
        extra = []
        if self.resolved_at:
            extra.append(f"computed at {self.resolved_at}")
        if self.env_vars:
            extra.append("env " + ", ".join(self.env_vars))
        if self.config_reads:
            extra.append("reads " + ", ".join(self.config_reads[:8]))
        for name, members in self.constants.items():
            shown = ", ".join(members[:6]) + (", …" if len(members) > 6 else "")
            extra.append(f"{name} = {{{shown}}}" if members else name)
        return text + (f" ({'; '.join(extra)})" if extra else "")


@record
@dataclass
class Twin:
    """A same-named class in another module of the tree."""

    qualname: str
    relpath: str
    line: int | None
    selectors: list[Selector] = field(default_factory=list)


def _mro_names(index: object, qualname: str, limit: int = 30) -> set[str]:
    seen: set[str] = set()
    todo = [qualname]
    while todo and len(seen) < limit:
        q = todo.pop()
        if q in seen:
            continue
        seen.add(q)
        sym = index.resolve(q)  # type: ignore[attr-defined]
        if sym is not None and getattr(sym, "kind", None) == "class":
            todo.extend(sym.bases)
    return seen


@tree_memo
def find_twins(index: object, target: str) -> list[Twin]:
    """Classes named like ``target``'s class elsewhere in the tree, with their selectors.

    Subclasses of the target are not twins: they inherit the patch. Finding selectors
    scans every file of the tree, so the result is cached per tree fingerprint.
    """
    name = target.rsplit(".", 1)[-1]
    target_sym = index.resolve(target)  # type: ignore[attr-defined]
    if target_sym is None or target_sym.kind != "class":
        return []
    twins: list[Twin] = []
    for sym in index.find_definitions(name):  # type: ignore[attr-defined]
        if (
            sym.kind != "class"
            or sym.qualname == target_sym.qualname
            or sym.relpath == target_sym.relpath
        ):
            continue
        if target_sym.qualname in _mro_names(index, sym.qualname):
            continue
        if "test" in sym.relpath.split("/")[1:-1]:
            continue
        twin = Twin(sym.qualname, sym.relpath, sym.lineno)
        twin.selectors = find_selectors(index, sym.module, name, target_sym.module)
        twins.append(twin)
    return twins


def _mentions(nodes: list[ast.stmt] | ast.expr, module: str, name: str) -> bool:
    """Whether code imports ``name`` from ``module`` or spells ``module.name``."""
    items = nodes if isinstance(nodes, list) else [nodes]
    for top in items:
        for node in ast.walk(top):
            if isinstance(node, ast.ImportFrom) and node.module == module:
                if any(a.name == name for a in node.names):
                    return True
            elif isinstance(node, ast.Import) and any(a.name == module for a in node.names):
                return True
            elif isinstance(node, ast.Attribute) and dotted(node) == f"{module}.{name}":
                return True
    return False


def parsed_files_containing(index: object, needle: str) -> Iterator[tuple[str, ast.Module]]:
    """(relpath, syntax tree) of every parsable tree file whose text contains ``needle``.

    The substring test is a cheap filter: only the few files that pass it are parsed.
    Texts come through the index, which reads each file once however many twins are
    searched for.
    """
    for relpath in index.tree.iter_py_files():  # type: ignore[attr-defined]
        try:
            text = index.text(relpath)  # type: ignore[attr-defined]
        except OSError:
            continue
        if needle in text:
            module = parse_text(text)
            if module is not None:
                yield relpath, module


def find_selectors(
    index: object, twin_module: str, name: str, target_module: str
) -> list[Selector]:
    """``if``/conditional expressions choosing the twin, with their conditions resolved."""
    selectors: list[Selector] = []
    for relpath, module in parsed_files_containing(index, twin_module):  # type: ignore[attr-defined]
        if len(selectors) >= _MAX_SITES:
            break
        aliases = _local_aliases(module, twin_module, name)
        for node in ast.walk(module):
            if isinstance(node, ast.If):
                in_body = _mentions(node.body, twin_module, name)
                in_else = _mentions(node.orelse, twin_module, name)
            elif isinstance(node, ast.IfExp):
                in_body = _names_any(node.body, aliases)
                in_else = _names_any(node.orelse, aliases)
            else:
                continue
            if in_body == in_else or ast.unparse(node.test).endswith("TYPE_CHECKING"):
                continue
            sel = Selector(
                relpath, node.lineno, ast.unparse(node.test), "if" if in_body else "else"
            )
            resolve_condition(index, node.test, sel)
            selectors.append(sel)
    return selectors


def _local_aliases(module: ast.Module, twin_module: str, name: str) -> set[str]:
    out = set()
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module == twin_module:
            out |= {a.asname or a.name for a in node.names if a.name == name}
    return out


def _names_any(expr: ast.expr, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(expr))


def _condition_attr(test: ast.expr) -> str | None:
    """The attribute/name a condition hinges on (``self.use_v2`` → ``use_v2``)."""
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute):
            return node.attr
        if isinstance(node, ast.Name):
            return node.id
    return None


def resolve_condition(index: object, test: ast.expr, sel: Selector) -> None:
    """Fill ``sel`` with env vars and constants the condition depends on.

    Follows ``self.flag`` to whatever property/method named ``flag`` the tree defines
    (first found by the index), and from there one level of ``self._helper()`` calls.
    """
    _collect(test, sel, index, None)
    attr = _condition_attr(test)
    if not attr:
        return
    for sym in _members_named(index, attr):
        sel.resolved_at = f"{sym[0]}:{sym[1].lineno} ({sym[2]})"
        module, func, cls_node = sym[3], sym[1], sym[4]
        _collect(func, sel, index, module)
        helpers = {
            n.func.attr
            for n in ast.walk(func)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "self"
        }
        funcs = {
            n.func.id
            for n in ast.walk(func)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        for node in cls_node.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in helpers:
                _collect(node, sel, index, module)
                funcs |= {
                    n.func.id
                    for n in ast.walk(node)
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                }
        for node in module.body:  # module-level helpers such as an architecture-list getter
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in funcs:
                _collect(node, sel, index, module)
        break


def _members_named(index: object, attr: str):
    """(relpath, function node, qualname, module ast, class node) for methods named ``attr``."""
    for relpath, module in parsed_files_containing(index, f"def {attr}("):  # type: ignore[attr-defined]
        for cls in module.body:
            if not isinstance(cls, ast.ClassDef):
                continue
            for node in cls.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == attr:
                    is_prop = any(
                        dotted(d) in ("property", "cached_property", "functools.cached_property")
                        for d in node.decorator_list
                    )
                    if is_prop:
                        yield relpath, node, f"{cls.name}.{attr}", module, cls


def _collect(node: ast.AST, sel: Selector, index: object, module: ast.Module | None) -> None:
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "envs"
        ):
            _add(sel.env_vars, sub.attr)
        elif isinstance(sub, ast.Call):
            fn = dotted(sub.func) or ""
            if (
                fn in ("os.getenv", "os.environ.get", "getenv")
                and sub.args
                and isinstance(sub.args[0], ast.Constant)
            ):
                _add(sel.env_vars, str(sub.args[0].value))
        elif isinstance(sub, ast.Subscript) and dotted(sub.value) == "os.environ":
            if isinstance(sub.slice, ast.Constant):
                _add(sel.env_vars, str(sub.slice.value))
        elif isinstance(sub, ast.Attribute) and (dotted(sub.value) or "").endswith("_config"):
            _add(sel.config_reads, f"{dotted(sub.value).rsplit('.', 1)[-1]}.{sub.attr}")
        elif (
            isinstance(sub, ast.Name)
            and sub.id.isupper()
            and len(sub.id) > 3
            and sub.id not in sel.constants
        ):
            if module is not None:
                members = _constant_members(module, sub.id)
                if members is not None:
                    sel.constants[sub.id] = members


def _add(items: list[str], value: str) -> None:
    if value not in items:
        items.append(value)


def _constant_members(module: ast.Module, name: str) -> list[str] | None:
    """String members of a module-level collection constant (an architecture list)."""
    for node in module.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            value = node.value
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ):
            value = node.value
        else:
            continue
        strings = sorted(
            {
                n.value
                for n in ast.walk(value)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            }
        )
        return strings
    return None
