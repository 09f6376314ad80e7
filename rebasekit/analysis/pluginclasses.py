"""Plugin classes that run as (or on top of) an upstream class: patches and plain subclasses.

Patches are the corpus's :class:`PatchClass` records; a plain subclass is a plugin
``class Mine(UpstreamBase)`` whose first base is an upstream class through the file's
imports. Both have methods whose ``self`` is an instance of the upstream class, so the
calls they make on ``self`` and through ``super()`` bind against upstream signatures.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from rebasekit.analysis.shapes import self_assignments
from rebasekit.astutil import FuncNode, children, dotted
from rebasekit.corpus import version_gates
from rebasekit.corpus.constructed import constructed_class_names
from rebasekit.corpus.models import PatchClass, PluginCorpus, corpus_memo
from rebasekit.index import CodeIndex, Symbol

T = TypeVar("T")


@dataclass
class PluginClass:
    """One plugin class bound to an upstream class (``upstream``, dotted as imported)."""

    name: str
    relpath: str
    node: ast.ClassDef
    upstream: str
    patch: PatchClass | None = None
    own_names: set[str] = field(default_factory=set)  # members and self.X it assigns

    @property
    def kind(self) -> str:
        return "patch" if self.patch is not None else "subclass"

    def methods(self) -> list[FuncNode]:
        return [n for n in self.node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def import_map(corpus: PluginCorpus, relpath: str) -> dict[str, str]:
    """Local name -> upstream dotted name for one file (module-level imports win)."""
    out: dict[str, str] = {}
    for imp in corpus.imports:
        if imp.relpath == relpath and imp.alias != "*":
            # ``import a.b`` binds ``a`` to the top package, not to ``a.b``
            top = imp.name is None and imp.alias == imp.module.split(".")[0]
            if imp.in_function is None or imp.alias not in out:
                out[imp.alias] = imp.alias if top else imp.target
    return out


def expand(names: dict[str, str], text: str | None) -> str | None:
    """``text`` with its first segment mapped through ``names`` (None: not upstream)."""
    if not text:
        return None
    head, _, rest = text.partition(".")
    target = names.get(head)
    if target is None:
        return None
    return f"{target}.{rest}" if rest else target


def is_static(func: FuncNode) -> bool:
    return any(dotted(d) == "staticmethod" for d in func.decorator_list)


def self_name(func: FuncNode) -> str | None:
    """The name the instance (or class) is bound to in ``func``; None for staticmethods."""
    if is_static(func):
        return None
    args = func.args.posonlyargs + func.args.args
    return args[0].arg if args else None


def _class_names(node: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names |= set(self_assignments(stmt))
        elif isinstance(stmt, ast.Assign):
            names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
    return names


def _memo(corpus: PluginCorpus, key: str, build: Callable[[], T]) -> T:
    """One result per corpus: the corpus never changes after extraction."""
    return corpus_memo(corpus, ("pluginclasses", key), build)


def plugin_classes(corpus: PluginCorpus) -> list[PluginClass]:
    """Every patch with a target and every plain subclass of an upstream class."""
    return _memo(corpus, "classes", lambda: _plugin_classes(corpus))


def _patch_own_names(module: ast.Module, node: ast.ClassDef, patch: PatchClass) -> set[str]:
    """What :func:`rebasekit.analysis.attrs.patch_own_names` says, from the node in hand."""
    return (
        {a.name for a in patch.attributes}
        | _class_names(node)
        | constructed_class_names(module, node)
    )


def _plugin_classes(corpus: PluginCorpus) -> list[PluginClass]:
    out: list[PluginClass] = []
    patch_at = {(p.relpath, p.lineno): p for p in corpus.patches}
    patched = {p.relpath for p in corpus.patches}
    for relpath in corpus.parsed_relpaths():
        names = import_map(corpus, relpath)
        if not names and relpath not in patched:
            continue  # no patch, and no import a class could subclass: its tree is not needed
        module = corpus.module(relpath)
        if module is None:
            continue
        for node in corpus.nodes(relpath, ast.ClassDef):
            patch = patch_at.get((relpath, node.lineno))
            if patch is not None:
                if patch.target:
                    own = _patch_own_names(module, node, patch)
                    out.append(PluginClass(node.name, relpath, node, patch.target, patch, own))
                continue
            if not node.bases:
                continue
            base = expand(names, dotted(node.bases[0]))
            if base is not None:
                out.append(PluginClass(node.name, relpath, node, base, None, _class_names(node)))
    return out


def patched_names(corpus: PluginCorpus, index: CodeIndex, cls: Symbol) -> set[str]:
    """Names any patch of the plugin adds to ``cls`` (or to a class of its MRO)."""
    quals = {k.qualname for k in index.mro(cls)}
    names: set[str] = set()
    for pc in plugin_classes(corpus):
        patch = pc.patch
        if patch is None:
            continue
        target = index.resolve(patch.target) if patch.target else None
        if target is not None and target.qualname in quals:
            names |= pc.own_names | {a.alias for a in patch.orig_aliases}
    return names


def upstream_class(index: CodeIndex, pc: PluginClass) -> Symbol | None:
    sym = index.resolve(pc.upstream)
    return sym if sym is not None and sym.kind == "class" else None


def replaced_names(corpus: PluginCorpus) -> set[str]:
    """Upstream dotted names the plugin assigns anywhere (``mod.Cls = Mine``,
    ``Cls.meth = fn``, ``setattr(Cls, "meth", fn)``): what they name at run time is the
    plugin's, so nothing read from the upstream definition holds for them."""
    return _memo(corpus, "replaced", lambda: _replaced_names(corpus))


def _replaced_names(corpus: PluginCorpus) -> set[str]:
    out: set[str] = set()
    for relpath in corpus.parsed_relpaths():
        names = import_map(corpus, relpath)
        if not names:
            continue  # every name it assigns would have to come from an upstream import
        module = corpus.module(relpath)
        if module is None:
            continue
        nodes = [
            *corpus.nodes(relpath, ast.Assign),
            *corpus.nodes(relpath, ast.AnnAssign),
            *corpus.nodes(relpath, ast.Call),
        ]
        for node in nodes:  # the result is a set: the order of the node kinds is free
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Attribute):
                        full = expand(names, dotted(t))
                        if full:
                            out.add(full)
            elif (
                isinstance(node, ast.Call)
                and dotted(node.func) == "setattr"
                and len(node.args) == 3
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                owner = expand(names, dotted(node.args[0]))
                if owner:
                    out.add(f"{owner}.{node.args[1].value}")
    return out


def method_nodes(func: FuncNode, version: str | None) -> list[ast.AST]:
    """The nodes of ``func`` that run as its own code at ``version``.

    Nested classes are left out (their ``self`` and ``super()`` are another class's), and
    so are version-gated branches (``if vllm_version_is("0.23.0"): ... else: ...``) that
    do not run at the scanned release.
    """
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(children(func))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ClassDef):
            continue
        out.append(node)
        if isinstance(node, ast.If):
            branches = version_gates.gate(node.test)
            then_spec, else_spec = branches if branches else (None, None)
            stack.append(node.test)
            if version_gates.runs_at(then_spec, version):
                stack.extend(node.body)
            if version_gates.runs_at(else_spec, version):
                stack.extend(node.orelse)
            continue
        stack.extend(children(node))
    return out
