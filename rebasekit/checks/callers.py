"""RK217/RK218: overrides measured against how upstream calls them and what they forward.

RK217 reads upstream's own call sites of an overridden method at the scanned tree
(:mod:`rebasekit.analysis.upstreamuses`): a keyword the override cannot take, which
upstream's definition names as a parameter, fails at that call site — unless that code
never runs (:mod:`rebasekit.analysis.deadcode`): then the finding is info and says why.
RK218 compares the upstream parameter lists at OLD (the base) and NEW: a parameter the
override still forwards by position but upstream dropped now fills another parameter.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rebasekit.analysis.binding import render_params
from rebasekit.analysis.deadcode import never_runs
from rebasekit.analysis.defnodes import call_params
from rebasekit.analysis.forwarding import forwards
from rebasekit.analysis.pluginclasses import PluginClass, plugin_classes, upstream_class
from rebasekit.analysis.reachers import in_replaced, replaced_functions
from rebasekit.analysis.upstreamuses import UpstreamUse, uses_of
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Location, Severity
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.models import Param, ParamKind, Signature
from rebasekit.index.visitor import signature_of
from rebasekit.records import CallerKeywordMissing, ForwardsRemovedParam

_NAMED = (ParamKind.POSITIONAL_OR_KEYWORD, ParamKind.KEYWORD_ONLY)


def _ver(index: CodeIndex) -> str:
    return index.tree.version or index.tree.label


def _member(index: CodeIndex, pc: PluginClass, name: str) -> tuple[Symbol, Symbol] | None:
    cls = upstream_class(index, pc)
    if cls is None:
        return None
    sym = index.lookup_member(cls, name)
    if sym is None or sym.kind != "function" or sym.signature is None:
        return None
    return cls, sym


@register_check(codes=["RK217"])
def check_caller_keywords(ctx: ScanContext) -> Iterator[Finding]:
    for pc in plugin_classes(ctx.corpus):
        if pc.patch is None:
            # a plain subclass runs only where the plugin builds it, usually from callers
            # of its own (its worker calls its runner): upstream's callers prove nothing
            continue
        for func in pc.methods():
            sig = signature_of(func)
            if sig.var_keyword is not None or (
                func.name.startswith("__") and func.name != "__init__"
            ):
                continue
            found = _member(ctx.new, pc, func.name)
            if found is None:
                continue
            cls, sym = found
            accepted = {p.name for p in sig.params if p.kind in _NAMED}
            upstream_named = {p.name for p in sym.signature.params if p.kind in _NAMED}
            name = cls.name if func.name == "__init__" else func.name
            reported: set[str] = set()
            unreached: dict[str, tuple[UpstreamUse, str]] = {}
            for use in uses_of(ctx.new, cls, name):
                if func.name == "__init__" and use.receiver is not None:
                    continue
                if in_replaced(ctx.new, ctx.corpus, use):
                    continue  # the plugin replaces the caller too: this call never runs
                missing = [
                    kw
                    for kw in use.shape.keywords
                    if kw not in accepted and kw in upstream_named and kw not in reported
                ]
                if not missing:
                    continue
                why = _never_runs(ctx, use)
                for kw in missing:
                    if why is not None:
                        unreached.setdefault(kw, (use, why))
                        continue
                    reported.add(kw)
                    yield _report(ctx, pc, func, sym, sig, kw, use)
            for kw, (use, why) in unreached.items():
                if kw not in reported:
                    yield _report(ctx, pc, func, sym, sig, kw, use, unreached=why)


def _never_runs(ctx: ScanContext, use: UpstreamUse) -> str | None:
    if not use.caller:
        return None
    replaced = replaced_functions(ctx.new, ctx.corpus)[0]
    return never_runs(ctx.new, ctx.corpus, use.relpath, use.caller, replaced)


def _report(
    ctx: ScanContext,
    pc: PluginClass,
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    sym: Symbol,
    sig: Signature,
    kw: str,
    use: UpstreamUse,
    unreached: str | None = None,
) -> Finding:
    """One RK217; ``unreached``: why the call site never runs (then info, saying so)."""
    record = CallerKeywordMissing(
        func.name,
        kw,
        patch=pc.name,
        upstream=sym.qualname,
        tree=_ver(ctx.new),
        override_signature=sig.render(),
        caller=use.caller or use.relpath,
        call_site=f"{use.relpath}:{use.line}",
        call_text=use.text,
    )
    found = ctx.report(
        record,
        plugin=ctx.plugin_loc(pc.relpath, func.lineno, f"{pc.name}.{func.name}"),
        upstream=Location(use.relpath, use.line, None, use.caller or None),
        severity=Severity.INFO if unreached else None,
        suggestion=f"accept {kw} (upstream: {render_params(list(sym.signature.params))})",
    )
    if unreached is None:
        return found
    return found.with_reason(
        f"cannot fail: the call site never runs: {unreached}", "unreached_by_upstream", unreached
    )


def _bound(index: CodeIndex, sym: Symbol) -> list[Param] | None:
    found = call_params(index, sym, bound=True)
    return found[0] if found is not None else None


@register_check(codes=["RK218"], needs=["base"], pairwise=True)
def check_forwarded_params(ctx: ScanContext) -> Iterator[Finding]:
    base = ctx.base
    if base is None:
        return
    for pc in plugin_classes(ctx.corpus):
        for fwd in forwards(ctx.corpus, pc, ctx.new.tree.version):
            old_found, new_found = (
                _member(base, pc, fwd.upstream_attr),
                _member(ctx.new, pc, fwd.upstream_attr),
            )
            if old_found is None or new_found is None:
                continue
            old_params, new_params = _bound(base, old_found[1]), _bound(ctx.new, new_found[1])
            if old_params is None or new_params is None:
                continue
            new_names = {p.name for p in new_params}
            old_positional = [
                p
                for p in old_params
                if p.kind in (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)
            ]
            new_positional = [
                p
                for p in new_params
                if p.kind in (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)
            ]
            for position, name in fwd.forwarded:
                if position >= len(old_positional) or old_positional[position].name != name:
                    continue  # not forwarded into the parameter of the same name at OLD
                if name in new_names:
                    continue
                lands = new_positional[position].name if position < len(new_positional) else None
                record = ForwardsRemovedParam(
                    fwd.method,
                    name,
                    patch=pc.name,
                    upstream=new_found[1].qualname,
                    callee=fwd.callee,
                    position=position,
                    lands_in=lands,
                    old_tree=_ver(base),
                    tree=_ver(ctx.new),
                    old_signature=render_params(old_params),
                    new_signature=render_params(new_params),
                )
                yield ctx.report(
                    record,
                    plugin=ctx.plugin_loc(pc.relpath, fwd.line, f"{pc.name}.{fwd.method}"),
                    upstream=ctx.upstream_loc(new_found[1]),
                    suggestion=f"stop passing {name}; pass the remaining arguments by keyword",
                )
