"""Plugin calls into upstream: do they still bind, and do unpackings still fit?

The corpus already records every call into an upstream name with its argument shape
(``UpstreamCall``). This module adds the calls the corpus cannot name by import —
``super(Target, self).m(...)`` delegations inside patches — and the unpacking
assignments around calls, then judges both against the index of one tree.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rebasekit.analysis.binding import BindResult, bind, shape_of_call
from rebasekit.analysis.defnodes import call_params, def_node, mro_methods
from rebasekit.analysis.shapes import ReturnShape, dotted, return_shape, unpack_targets
from rebasekit.astutil import walk
from rebasekit.corpus.models import PatchClass, PluginCorpus, UpstreamCall, corpus_memo
from rebasekit.index import CodeIndex, Symbol


@dataclass(frozen=True)
class CallSite:
    """A call whose callee is known: an import-named upstream call or a super() delegation."""

    call: UpstreamCall
    bound: bool  # the callee receives ``self`` implicitly
    raw_function: bool = False  # reached through ``X.m.__func__`` (a classmethod's function)
    through_attr: str | None = None  # ``self.proc``: an attribute holding an upstream object


def plugin_module(corpus: PluginCorpus, relpath: str) -> ast.Module | None:
    """The corpus's syntax tree of one plugin file (parsed once, at extraction)."""
    return corpus.module(relpath)


def _import_map(corpus: PluginCorpus, relpath: str) -> dict[str, str]:
    return {
        imp.alias: imp.target
        for imp in corpus.imports
        if imp.relpath == relpath and imp.in_function is None
    }


def super_calls(corpus: PluginCorpus, index: CodeIndex) -> list[CallSite]:
    """``super(X, self).m(...)`` / ``super().m(...)`` in patch methods, resolved along the MRO.

    The callee is the first class after ``X`` (for bare ``super()``: after the target,
    since the method runs as the target's) in the target's MRO that defines ``m``.
    """
    out: list[CallSite] = []
    for patch in corpus.patches:
        if not patch.target:
            continue
        target = index.resolve(patch.target)
        module = plugin_module(corpus, patch.relpath)
        if target is None or target.kind != "class" or module is None:
            continue
        names = _import_map(corpus, patch.relpath)
        mro = index.mro(target)
        for method, call in _super_candidates(corpus, patch):
            site = _super_site(call, patch, method, names, mro, index)
            if site is not None:
                out.append(site)
    return out


def _super_candidates(corpus: PluginCorpus, patch: PatchClass) -> list[tuple[str, ast.Call]]:
    """(method name, call) for each ``super(...).m(...)`` call in the methods of ``patch``'s
    class statements, in walk order: what is resolved against each index depends on the
    corpus alone, so it is found once per corpus, not once per tree."""

    def build() -> list[tuple[str, ast.Call]]:
        out: list[tuple[str, ast.Call]] = []
        for node in corpus.nodes(patch.relpath, ast.ClassDef):
            if node.name != patch.name:
                continue
            for func in node.body:
                if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.extend((func.name, call) for call in walk(func) if _is_super_call(call))
        return out

    return corpus_memo(corpus, ("super_calls", patch.relpath, patch.name), build)


def _is_super_call(call: ast.AST) -> bool:
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Call)
        and dotted(call.func.value.func) == "super"
    )


def _super_site(
    call: ast.Call,
    patch: PatchClass,
    method: str,
    names: dict[str, str],
    mro: list[Symbol],
    index: CodeIndex,
) -> CallSite | None:
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
    assert isinstance(call.func.value, ast.Call)
    sup_args = call.func.value.args
    start_after = mro[0].qualname if mro else None
    if sup_args:
        first = dotted(sup_args[0]) or ""
        head, _, rest = first.partition(".")
        start_after = (names.get(head, head) + ("." + rest if rest else "")) if head else None
        resolved = index.resolve(start_after) if start_after else None
        start_after = resolved.qualname if resolved is not None else start_after
    quals = [k.qualname for k in mro]
    if start_after not in quals:
        return None
    name = call.func.attr
    for klass in mro[quals.index(start_after) + 1 :]:
        if name in klass.members:
            shape = shape_of_call(call)
            uc = UpstreamCall(
                patch.relpath,
                call.lineno,
                f"{klass.qualname}.{name}",
                shape.positional,
                shape.keywords,
                shape.star_args,
                shape.star_kwargs,
                in_function=f"{patch.name}.{method}",
                via_orig=None,
                patch=patch.name,
            )
            return CallSite(uc, bound=True)
    return None


def call_sites(corpus: PluginCorpus, index: CodeIndex) -> list[CallSite]:
    """Every plugin call with a known upstream callee (corpus calls + super() delegations)."""
    raw: set[tuple[str, str]] = set()
    for patch in corpus.patches:
        for alias in patch.orig_aliases:
            if (
                alias.expr.replace(" ", "").endswith(".__func__")
                or alias.unwrapped == "__wrapped__"
            ):
                raw.add((patch.name, alias.alias))
    sites = [
        CallSite(c, bound=c.through_self, raw_function=(c.patch, c.via_orig) in raw)
        for c in corpus.calls
    ]
    return sites + super_calls(corpus, index)


@dataclass
class BindCheck:
    """The verdict for one call site against one tree."""

    site: CallSite
    callee: Symbol
    params_from: Symbol
    result: BindResult


def check_binding(site: CallSite, index: CodeIndex) -> BindCheck | None:
    """Bind one call at ``index``; None when the callee or its parameters are unknown there."""
    sym = index.resolve(site.call.callee)
    if sym is None:
        return None
    found = call_params(index, sym, bound=site.bound, raw_function=site.raw_function)
    if found is None:
        return None
    params, source = found
    from rebasekit.analysis.binding import CallShape

    c = site.call
    shape = CallShape(c.positional, tuple(c.keywords), c.star_args, c.star_kwargs)
    return BindCheck(site, sym, source, bind(shape, params))


def upstream_call_sites(
    index: CodeIndex, owner: Symbol, callee: Symbol
) -> list[tuple[str, int, str]]:
    """Where ``owner`` (a class, with its in-tree bases) calls ``callee``: (method, line, call text).

    Used to tell the user where upstream makes the call now, e.g. a constructor that
    moved from ``__init__`` to ``create_weights``.
    """
    want = callee.name if callee.kind == "class" else callee.qualname.rsplit(".", 1)[-1]
    out: list[tuple[str, int, str]] = []
    for klass, func in mro_methods(index, owner):
        for call in walk(func):
            if isinstance(call, ast.Call):
                name = dotted(call.func) or ""
                if name.rsplit(".", 1)[-1] == want:
                    line = (klass.lineno or 1) + call.lineno - 1
                    out.append(
                        (
                            f"{klass.qualname.rsplit('.', 1)[-1]}.{func.name}",
                            line,
                            ast.unparse(call),
                        )
                    )
    return out


# ------------------------------------------------------------------------- unpacking


@dataclass(frozen=True)
class Unpacking:
    """``a, b = f(...)`` in plugin code, with the corpus call it unpacks."""

    call: UpstreamCall
    arity: int
    line: int


def unpackings(corpus: PluginCorpus) -> list[Unpacking]:
    """Tuple-unpacking assignments (and for-loop targets are ignored) of upstream calls."""
    return list(corpus_memo(corpus, ("unpackings",), lambda: _unpackings(corpus)))


def _unpackings(corpus: PluginCorpus) -> list[Unpacking]:
    by_line: dict[tuple[str, int], list[UpstreamCall]] = {}
    for c in corpus.calls:
        by_line.setdefault((c.relpath, c.lineno), []).append(c)
    out: list[Unpacking] = []
    for relpath in sorted({c.relpath for c in corpus.calls}):
        module = plugin_module(corpus, relpath)
        if module is None:
            continue
        for node in corpus.nodes(relpath, ast.Assign):
            if not isinstance(node.value, ast.Call):
                continue
            arity = unpack_targets(node)
            if arity is None:
                continue
            for c in by_line.get((relpath, node.value.lineno), []):
                if (
                    c.callee.rsplit(".", 1)[-1]
                    == (dotted(node.value.func) or "").rsplit(".", 1)[-1]
                    or c.via_orig
                ):
                    out.append(Unpacking(c, arity, node.lineno))
                    break
    return out


def callee_return_shape(index: CodeIndex, callee: str) -> tuple[Symbol, ReturnShape] | None:
    """The return shape of a function callee at ``index`` (classes are not unpacked here)."""
    sym = index.resolve(callee)
    if sym is None or sym.kind != "function":
        return None
    node = def_node(sym)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return sym, return_shape(node)
