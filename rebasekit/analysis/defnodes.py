"""Small bridges from index symbols to the syntax trees and parameter lists the deep checks need."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rebasekit.analysis.binding import drop_bound
from rebasekit.astutil import FuncNode, parse_text
from rebasekit.dedent import dedent
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.models import Param

DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def def_node(sym: Symbol) -> DefNode | None:
    """The syntax tree of one function/class symbol (parsed from its own source lines)."""
    if sym.kind not in ("function", "class") or sym.lineno is None:
        return None
    module = parse_text(dedent(sym.source))
    if module is None or not module.body:
        return None
    node = module.body[0]
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None


def mro_methods(index: CodeIndex, cls: Symbol) -> Iterator[tuple[Symbol, FuncNode]]:
    """``(class, method node)`` for each method written in ``cls`` or an in-tree base, MRO order.

    Line numbers in a method node count from its class's first line (``klass.lineno``).
    """
    for klass in index.mro(cls):
        node = def_node(klass)
        if not isinstance(node, ast.ClassDef):
            continue
        for func in node.body:
            if isinstance(func, FuncNode):
                yield klass, func


def owner_class(index: CodeIndex, sym: Symbol) -> Symbol | None:
    """The class a function symbol is a method of, or None for a module-level function."""
    if sym.kind != "function" or "." not in sym.qualname:
        return None
    owner = index.resolve(sym.qualname.rsplit(".", 1)[0])
    return owner if owner is not None and owner.kind == "class" else None


def is_dataclass_like(sym: Symbol) -> bool:
    """Classes whose ``__init__`` is generated (their parameters are not written down)."""
    return any(
        d.split(".")[-1] in ("dataclass", "dataclasses", "define", "attrs", "frozen")
        for d in sym.decorators
    ) or any("NamedTuple" in b or "BaseModel" in b or "TypedDict" in b for b in sym.external_bases)


def call_params(
    index: CodeIndex, sym: Symbol, *, bound: bool, raw_function: bool = False
) -> tuple[list[Param], Symbol] | None:
    """Parameters a call to ``sym`` binds against, and the symbol that defines them.

    A class binds against its ``__init__`` (found along the MRO) minus ``self``. A method
    reached through its class (``Target.m(self, ...)``, an ``_orig_`` alias) binds all
    its parameters unless ``bound``; classmethods drop ``cls`` unless reached as the raw
    function (``Target.m.__func__``, ``raw_function``). None when the
    parameters cannot be known statically (generated ``__init__``, out-of-tree base).
    """
    if sym.kind == "class":
        if is_dataclass_like(sym):
            return None
        init = index.lookup_member(sym, "__init__")
        if init is None or init.signature is None:
            return None
        return drop_bound(list(init.signature.params)), init
    if sym.kind != "function" or sym.signature is None:
        return None
    params = list(sym.signature.params)
    if sym.is_staticmethod:
        return params, sym
    if (sym.is_classmethod and not raw_function) or (bound and owner_class(index, sym) is not None):
        return drop_bound(params), sym
    return params, sym
