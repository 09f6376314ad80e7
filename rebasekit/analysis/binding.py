"""Bind a call's argument *shape* to a callee's parameter list, the way Python would.

A call in plugin code is reduced to its shape (how many positionals, which keywords,
whether ``*args``/``**kwargs`` were spread) because static analysis never knows values.
Binding that shape against the parameters of the upstream callable at NEW says whether
the call still works: a new required parameter, a removed keyword or a shorter
positional list all break it at run time, and none of them break an import.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from rebasekit.index.models import Param, ParamKind, Signature
from rebasekit.index.visitor import signature_of

POSITIONAL_ONLY = ParamKind.POSITIONAL_ONLY
POSITIONAL_OR_KEYWORD = ParamKind.POSITIONAL_OR_KEYWORD
VAR_POSITIONAL = ParamKind.VAR_POSITIONAL
KEYWORD_ONLY = ParamKind.KEYWORD_ONLY
VAR_KEYWORD = ParamKind.VAR_KEYWORD


def _has_default(p: Param) -> bool:
    return p.default is not None or p.kind in (VAR_POSITIONAL, VAR_KEYWORD)


@dataclass(frozen=True)
class CallShape:
    """What a call site passes, as far as it can be known without running it."""

    positional: int = 0
    keywords: tuple[str, ...] = ()
    star_args: bool = False  # ``f(*xs)``: any number of extra positionals
    star_kwargs: bool = False  # ``f(**kw)``: any keywords


@dataclass
class BindResult:
    """Problems binding a shape to parameters; empty ``problems`` means the call binds."""

    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    too_many: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def shape_of_call(call: ast.Call) -> CallShape:
    """The argument shape of ``call`` (starred arguments make the shape open-ended)."""
    positional = 0
    star_args = False
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            star_args = True
        else:
            positional += 1
    keywords: list[str] = []
    star_kwargs = False
    for kw in call.keywords:
        if kw.arg is None:
            star_kwargs = True
        else:
            keywords.append(kw.arg)
    return CallShape(positional, tuple(keywords), star_args, star_kwargs)


def params_of(func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[Param]:
    """The parameter list of a function definition, in binding order (the index's model)."""
    return list(signature_of(func).params)


def drop_bound(params: list[Param]) -> list[Param]:
    """Parameters left once the first one is bound (``self``/``cls`` of a bound method)."""
    for i, p in enumerate(params):
        if p.kind in (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD):
            return params[:i] + params[i + 1 :]
        if p.kind == VAR_POSITIONAL:
            return params  # ``def f(*args)``: self is swallowed by *args
        break
    return params


def bind(shape: CallShape, params: list[Param] | Signature) -> BindResult:
    """Bind ``shape`` to ``params`` and list every way the call would raise ``TypeError``.

    With ``*args`` or ``**kwargs`` at the call site some checks become undecidable; those
    are skipped rather than guessed, so every reported problem is certain.
    """
    if isinstance(params, Signature):
        params = list(params.params)
    result = BindResult()
    positional_params = [p for p in params if p.kind in (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD)]
    has_var_pos = any(p.kind == VAR_POSITIONAL for p in params)
    has_var_kw = any(p.kind == VAR_KEYWORD for p in params)
    by_name = {p.name: p for p in params if p.kind in (POSITIONAL_OR_KEYWORD, KEYWORD_ONLY)}

    filled: set[str] = set()
    if shape.positional > len(positional_params) and not has_var_pos:
        result.too_many = shape.positional - len(positional_params)
        result.problems.append(
            f"too many positional arguments: {shape.positional} given, "
            f"at most {len(positional_params)} accepted"
        )
    for p in positional_params[: shape.positional]:
        filled.add(p.name)

    for name in shape.keywords:
        if name in by_name:
            if name in filled:
                result.problems.append(f"argument {name!r} given both by position and by keyword")
            filled.add(name)
        elif not has_var_kw:
            result.unexpected.append(name)
            result.problems.append(f"unexpected keyword argument {name!r}")

    for p in params:
        if _has_default(p) or p.name in filled or p.kind in (VAR_POSITIONAL, VAR_KEYWORD):
            continue
        if p.kind == POSITIONAL_ONLY and shape.star_args:
            continue
        if p.kind == POSITIONAL_OR_KEYWORD and (shape.star_args or shape.star_kwargs):
            continue
        if p.kind == KEYWORD_ONLY and shape.star_kwargs:
            continue
        result.missing.append(p.name)
    if result.missing:
        names = ", ".join(repr(n) for n in result.missing)
        result.problems.append(
            f"missing required argument{'s' if len(result.missing) > 1 else ''} {names}"
        )
    return result


def render_params(params: list[Param]) -> str:
    """A compact ``(a, b=…, *, c)`` rendering for messages."""
    return Signature(tuple(params)).render()
