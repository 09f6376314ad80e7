"""Calls through instance attributes that hold upstream objects: ``self.proc(...)``.

A plugin class often builds upstream helpers in its constructor (``self.proc =
Processor(...)``) and calls them later (``self.proc(x, meta)``, ``self.proc.step(x)``).
The corpus names calls by import only, so these reach no signature check. Here an
attribute counts as holding an instance of upstream class ``C`` when every assignment
to it in the class is a call of ``C`` (a name the file imports from upstream); calling
the attribute itself calls ``C.__call__``, or ``C.forward`` when ``__call__`` comes from
a base outside the tree (``torch.nn.Module`` dispatches to ``forward``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rebasekit.analysis.callsites import CallSite
from rebasekit.analysis.pluginclasses import expand, import_map, self_name
from rebasekit.astutil import FuncNode, children, dotted
from rebasekit.corpus.models import PluginCorpus, UpstreamCall, corpus_memo
from rebasekit.index import CodeIndex, Symbol


def _methods(cls: ast.ClassDef) -> list[FuncNode]:
    return [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _own_walk(func: FuncNode) -> list[ast.AST]:
    """Nodes of ``func`` outside nested classes and functions (their ``self`` is another)."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(children(func))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        out.append(node)
        stack.extend(children(node))
    return out


@dataclass(frozen=True)
class _Method:
    """A method of a plugin class: its ``self`` name and its own attribute calls."""

    func: FuncNode
    me: str | None
    calls: list[ast.Call]  # ``<x>.<attr>(...)`` calls outside nested scopes, in walk order


@dataclass(frozen=True)
class _ClassCalls:
    """What one plugin class assigns to ``self`` attributes and calls through them.

    Read from the plugin's tree alone, so it is built once per corpus; which of those
    attributes hold upstream classes depends on the index and is resolved per index.
    """

    relpath: str
    cls: ast.ClassDef
    built: dict[str, set[str | None]]  # attribute -> the callee of each assignment (None: no call)
    methods: list[_Method]


def _assignments(
    cls: ast.ClassDef, names: dict[str, str], own: dict[int, list[ast.AST]]
) -> dict[str, set[str | None]]:
    """Attribute -> what each ``self.<attribute> = ...`` of the class builds (None: no call)."""
    seen: dict[str, set[str | None]] = {}
    for func in _methods(cls):
        me = self_name(func)
        if me is None:
            continue
        for node in own[id(func)]:
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                targets, value = [node.target], node.value
            for target in targets:
                if not (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == me
                ):
                    continue
                built = None
                if isinstance(value, ast.Call) and not isinstance(node, ast.AugAssign):
                    built = expand(names, dotted(value.func))
                seen.setdefault(target.attr, set()).add(built)
    return seen


def _resolve_held(
    cls: ast.ClassDef, seen: dict[str, set[str | None]], index: CodeIndex
) -> dict[str, Symbol]:
    """Attribute -> the upstream class every assignment to ``self.<attribute>`` constructs."""
    own = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out: dict[str, Symbol] = {}
    for attr, built in seen.items():
        if len(built) != 1 or attr in own:
            continue
        (name,) = built
        sym = index.resolve(name) if name else None
        if sym is not None and sym.kind == "class":
            out[attr] = sym
    return out


def _class_calls(corpus: PluginCorpus) -> list[_ClassCalls]:
    """Every plugin class of a file with imports, with its assignments and attribute calls."""
    out: list[_ClassCalls] = []
    for relpath in corpus.parsed_relpaths():
        names = import_map(corpus, relpath)
        if not names:
            continue
        for cls in corpus.nodes(relpath, ast.ClassDef):
            own = {id(f): _own_walk(f) for f in _methods(cls)}
            seen = _assignments(cls, names, own)
            if not any(len(b) == 1 and None not in b for b in seen.values()):
                continue  # no attribute is always built by a call: none can hold a class
            methods = [
                _Method(
                    f,
                    self_name(f),
                    [
                        n
                        for n in own[id(f)]
                        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    ],
                )
                for f in _methods(cls)
            ]
            out.append(_ClassCalls(relpath, cls, seen, methods))
    return out


def _call_target(index: CodeIndex, cls: Symbol) -> Symbol | None:
    """What calling an instance of ``cls`` runs: its ``__call__``, else an nn-style ``forward``."""
    call = index.lookup_member(cls, "__call__")
    if call is not None:
        return call if call.kind == "function" else None
    if not any(k.external_bases for k in index.mro(cls)):
        return None  # no base outside the tree could supply a dispatching __call__
    forward = index.lookup_member(cls, "forward")
    return forward if forward is not None and forward.kind == "function" else None


def attribute_calls(corpus: PluginCorpus, index: CodeIndex) -> list[CallSite]:
    """Calls ``self.X(...)`` and ``self.X.m(...)`` on attributes holding upstream objects.

    Two checks ask for the same corpus and index: one answer per corpus and index (the
    index is part of the key by identity). Callers must not change the list they get back.
    """
    return corpus_memo(corpus, ("attribute_calls", index), lambda: _attribute_calls(corpus, index))


def _attribute_calls(corpus: PluginCorpus, index: CodeIndex) -> list[CallSite]:
    out: list[CallSite] = []
    for entry in corpus_memo(corpus, ("attribute_call_sites",), lambda: _class_calls(corpus)):
        held = _resolve_held(entry.cls, entry.built, index)
        if not held:
            continue
        for method in entry.methods:
            for node in method.calls:
                func = node.func
                assert isinstance(func, ast.Attribute)
                callee = _callee(index, func, method.me, held)
                if callee is None:
                    continue
                out.append(
                    CallSite(
                        UpstreamCall(
                            entry.relpath,
                            node.lineno,
                            callee.qualname,
                            positional=sum(1 for a in node.args if not isinstance(a, ast.Starred)),
                            keywords=tuple(k.arg for k in node.keywords if k.arg is not None),
                            star_args=any(isinstance(a, ast.Starred) for a in node.args),
                            star_kwargs=any(k.arg is None for k in node.keywords),
                            in_function=f"{entry.cls.name}.{method.func.name}",
                        ),
                        bound=True,
                        through_attr=ast.unparse(func),
                    )
                )
    return out


def _callee(
    index: CodeIndex, func: ast.Attribute, me: str | None, held: dict[str, Symbol]
) -> Symbol | None:
    recv = func.value
    if isinstance(recv, ast.Name) and recv.id == me and func.attr in held:
        return _call_target(index, held[func.attr])
    if (
        isinstance(recv, ast.Attribute)
        and isinstance(recv.value, ast.Name)
        and recv.value.id == me
        and recv.attr in held
    ):
        member = index.lookup_member(held[recv.attr], func.attr)
        if member is not None and member.kind == "function" and not member.is_staticmethod:
            return member
    return None
