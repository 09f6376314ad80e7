"""Instance attributes upstream started to wrap in another object: ``self.X = W(self.X)``.

A patch that reaches into ``self.model`` (``self.model.forward = ...``) works on the
object it finds. When a release adds ``self.model = Wrapper(self.model, ...)`` on some
path, that object may be the wrapper: the patch changes the wrapper, not the model.
Classes that wrap usually also unwrap (``if isinstance(self.model, Wrapper): return
self.model.unwrap()``); the method doing so is what the patch should go through.
"""

from __future__ import annotations

import ast

from rebasekit.analysis.attrs import Provision
from rebasekit.analysis.defnodes import mro_methods
from rebasekit.astutil import dotted, parse_text, walk
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.cache import content_memo


def _wraps_itself(source: str, attr: str) -> str | None:
    """W when ``source`` is ``W(self.<attr>, ...)`` (any argument position), else None."""
    module = parse_text(source)
    if module is None or not module.body or not isinstance(module.body[0], ast.Expr):
        return None
    call = module.body[0].value
    if not isinstance(call, ast.Call):
        return None
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        if (
            isinstance(arg, ast.Attribute)
            and arg.attr == attr
            and isinstance(arg.value, ast.Name)
            and arg.value.id == "self"
        ):
            return dotted(call.func) or ast.unparse(call.func)
    return None


def new_wraps(old: Provision, new: Provision, attr: str) -> list[tuple[str, str, int, str]]:
    """(wrapper, where, line, source) for wrappers of ``self.<attr>`` that OLD never used."""
    before = {
        w for _, v in old.assignments if v.kind == "call" and (w := _wraps_itself(v.source, attr))
    }
    out: list[tuple[str, str, int, str]] = []
    for where, value in new.assignments:
        if value.kind != "call":
            continue
        wrapper = _wraps_itself(value.source, attr)
        if wrapper is not None and wrapper not in before:
            out.append((wrapper, where, value.line, value.source))
    return out


def unwrapper(index: CodeIndex, cls: Symbol, attr: str, wrapper: str) -> Symbol | None:
    """A method of ``cls`` (or its in-tree bases) testing ``isinstance(self.<attr>, ...W...)``.

    Which method it is depends on the texts of the classes of the MRO alone, so it is
    kept in the index's cache under them: finding it walks every method of classes of
    thousands of lines, parsed for this alone on a warm scan.
    """
    mro = index.mro(cls)
    parts = (attr, wrapper, tuple((k.kind, k.name, k.lineno, k.source) for k in mro))
    found = content_memo(
        index.cache.derived(),
        "unwrapper",
        parts,
        lambda: _unwrapping_method(index, cls, mro, attr, wrapper),
        tuple[int, str] | None,
    )
    return index.lookup_member(mro[found[0]], found[1]) if found is not None else None


def _unwrapping_method(
    index: CodeIndex, cls: Symbol, mro: list[Symbol], attr: str, wrapper: str
) -> tuple[int, str] | None:
    """(position in ``mro`` of the class, method name) of the first unwrapping method."""
    short = wrapper.rsplit(".", 1)[-1]
    for klass, func in mro_methods(index, cls):
        if not _returns_attr(func, attr):
            continue  # tests the wrapper for another purpose than handing the object out
        for call in walk(func):
            if not (
                isinstance(call, ast.Call)
                and dotted(call.func) == "isinstance"
                and len(call.args) == 2
            ):
                continue
            subject, kinds = call.args
            names = {(dotted(k) or "").rsplit(".", 1)[-1] for k in walk(kinds)}
            if dotted(subject) == f"self.{attr}" and short in names:
                return next(i for i, k in enumerate(mro) if k is klass), func.name
    return None


def _returns_attr(func: ast.FunctionDef | ast.AsyncFunctionDef, attr: str) -> bool:
    for node in walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            for sub in walk(node.value):
                if dotted(sub) == f"self.{attr}":
                    return True
    return False


def stores_into(cls: ast.ClassDef, attr: str | None = None) -> dict[tuple[str, str], int]:
    """(X, method) -> first line where a method of ``cls`` sets an attribute of ``self.X``.

    ``self.X.a = v``, ``self.X.a += v`` and ``setattr(self.X, "a", v)`` count.
    """
    out: dict[tuple[str, str], int] = {}
    for func in cls.body:
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        me = func.args.args[0].arg if func.args.args else "self"
        for node in walk(func):
            holders: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                holders = [t.value for t in node.targets if isinstance(t, ast.Attribute)]
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(
                node.target, ast.Attribute
            ):
                holders = [node.target.value]
            elif isinstance(node, ast.Call) and dotted(node.func) == "setattr" and node.args:
                holders = [node.args[0]]
            for holder in holders:
                if (
                    isinstance(holder, ast.Attribute)
                    and isinstance(holder.value, ast.Name)
                    and holder.value.id == me
                    and (attr is None or holder.attr == attr)
                ):
                    key = (holder.attr, func.name)
                    out[key] = min(out.get(key, node.lineno), node.lineno)
    return out
