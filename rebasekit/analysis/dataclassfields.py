"""The ``__init__`` a dataclass generates, read from its field declarations.

``ModelRunnerOutput(finished_sending=...)`` breaks when upstream drops the field, yet
the class has no written ``__init__`` to compare with. The generated one takes the
class's annotated fields in order (bases first), minus ``ClassVar`` and
``field(init=False)``; ``kw_only=True`` and ``KW_ONLY`` make the rest keyword-only.
Any base the tree does not define, or that is not itself a dataclass, makes the
parameter list unknown (None) rather than guessed.
"""

from __future__ import annotations

import ast

from rebasekit.analysis.defnodes import def_node
from rebasekit.astutil import dotted
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.models import Param, ParamKind


def is_dataclass(cls: Symbol) -> bool:
    """Whether ``cls`` is decorated ``@dataclass`` (from the index facts: the decorator
    lines are not part of the class symbol's own source)."""
    return any(d.split("(")[0].split(".")[-1] == "dataclass" for d in cls.decorators)


def _kw_only(cls: Symbol) -> bool:
    return any(
        d.split("(")[0].split(".")[-1] == "dataclass" and "kw_only=True" in d.replace(" ", "")
        for d in cls.decorators
    )


def _field_call(value: ast.expr | None) -> ast.Call | None:
    if isinstance(value, ast.Call) and (dotted(value.func) or "").split(".")[-1] == "field":
        return value
    return None


def _own_fields(node: ast.ClassDef, kw_only: bool) -> list[Param]:
    params: list[Param] = []
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        annotation = ast.unparse(stmt.annotation)
        if "ClassVar" in annotation:
            continue
        if annotation.split(".")[-1] == "KW_ONLY":
            kw_only = True
            continue
        call = _field_call(stmt.value)
        default: str | None = None
        if call is not None:
            keywords = {k.arg: k.value for k in call.keywords}
            init = keywords.get("init")
            if isinstance(init, ast.Constant) and init.value is False:
                continue
            if "default" in keywords or "default_factory" in keywords:
                default = "…"
            kw = keywords.get("kw_only")
            field_kw = isinstance(kw, ast.Constant) and kw.value is True
        else:
            field_kw = False
            if stmt.value is not None:
                default = ast.unparse(stmt.value)
        kind = ParamKind.KEYWORD_ONLY if kw_only or field_kw else ParamKind.POSITIONAL_OR_KEYWORD
        params.append(Param(stmt.target.id, kind, default, annotation))
    return params


def dataclass_params(index: CodeIndex, cls: Symbol) -> list[Param] | None:
    """The generated ``__init__``'s parameters (without ``self``), or None when unknown."""
    if not is_dataclass(cls) or any(k.external_bases for k in index.mro(cls)):
        return None
    merged: dict[str, Param] = {}
    for klass in reversed(index.mro(cls)):
        node = def_node(klass)
        if not isinstance(node, ast.ClassDef):
            return None
        if "__init__" in klass.members:
            return None  # a written __init__ wins over the generated one
        if not is_dataclass(klass):
            if any(isinstance(s, ast.AnnAssign) for s in node.body):
                return None  # a plain base with annotations: not modelled
            continue
        for p in _own_fields(node, _kw_only(klass)):
            merged[p.name] = p  # a redefined field keeps its first position, as Python does
    positional = [p for p in merged.values() if p.kind is ParamKind.POSITIONAL_OR_KEYWORD]
    keyword = [p for p in merged.values() if p.kind is ParamKind.KEYWORD_ONLY]
    return positional + keyword
