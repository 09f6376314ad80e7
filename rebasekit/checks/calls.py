"""RK301/RK302: plugin calls into upstream that no longer bind, unpackings that no longer fit."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.attrcalls import attribute_calls
from rebasekit.analysis.binding import CallShape, bind, render_params
from rebasekit.analysis.callsites import (
    CallSite,
    call_sites,
    callee_return_shape,
    check_binding,
    unpackings,
    upstream_call_sites,
)
from rebasekit.analysis.defnodes import call_params
from rebasekit.analysis.selfunpack import self_unpackings
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding
from rebasekit.index import Symbol
from rebasekit.index.models import Signature
from rebasekit.records import CallNoLongerBinds, UnpackingMismatch


@register_check(codes=["RK301"])
def check_call_binding(ctx: ScanContext) -> Iterator[Finding]:
    replaced = _replacements(ctx)
    for site in [*call_sites(ctx.corpus, ctx.new), *attribute_calls(ctx.corpus, ctx.new)]:
        verdict = check_binding(site, ctx.new)
        if verdict is None or verdict.result.ok:
            continue
        if _binds_replacement(site, verdict.callee, replaced):
            continue  # the plugin installs its own function there, and the call fits it
        c = site.call
        params = call_params(
            ctx.new, verdict.callee, bound=site.bound, raw_function=site.raw_function
        )
        sig = render_params(params[0]) if params else "?"
        moved = _moved_note(ctx, site, verdict.callee)
        suggestion = _suggest(verdict.result, sig)
        if moved:
            suggestion += f"; upstream now makes this call in {moved}"
        record = CallNoLongerBinds(
            c.callee,
            c.positional,
            tuple(c.keywords),
            callee=verdict.callee.qualname,
            call_kind=_call_kind(site, verdict.callee),
            via=site.through_attr or c.via_orig,
            tree=_ver(ctx),
            problems=tuple(verdict.result.problems),
            upstream_signature=sig,
            old_signature=_old_signature(ctx, site) or None,
            moved_to=moved,
        )
        yield ctx.report(
            record,
            plugin=ctx.plugin_loc(c.relpath, c.lineno, c.in_function),
            upstream=ctx.upstream_loc(verdict.params_from),
            suggestion=suggestion,
        )


def _replacements(ctx: ScanContext) -> dict[str, Signature]:
    """``upstream.qualname`` -> signature of the plugin function an assignment installs there."""
    out: dict[str, Signature] = {}
    for patch in ctx.corpus.patches:
        if patch.is_class or not patch.target:
            continue
        owner = ctx.new.resolve(patch.target)
        for attr in patch.attributes:
            if owner is None or attr.signature is None:
                continue
            out.setdefault(f"{owner.qualname}.{attr.name}", attr.signature)
            # a package attribute that re-exports a function: calls name the definition
            defined = ctx.new.resolve(f"{owner.qualname}.{attr.name}")
            if defined is not None:
                out.setdefault(defined.qualname, attr.signature)
    return out


def _binds_replacement(site: CallSite, callee: Symbol, replaced: dict[str, Signature]) -> bool:
    """Whether the call fits the plugin's replacement of its callee (a constructor: ``__init__``)."""
    sig = replaced.get(callee.qualname)  # a function, or a class replaced by a factory
    init = callee.kind == "class" and sig is None
    if init:
        sig = replaced.get(f"{callee.qualname}.__init__")
    if sig is None:
        return False
    params = list(sig.params)
    if (init or site.bound) and params:
        params = params[1:]  # the instance is not among the call's arguments
    c = site.call
    return bind(CallShape(c.positional, tuple(c.keywords), c.star_args, c.star_kwargs), params).ok


def _ver(ctx: ScanContext) -> str:
    return ctx.new.tree.version or ctx.new.tree.label


def _call_kind(site: CallSite, callee: Symbol) -> str:
    if callee.kind == "class":
        return "constructor"
    if site.through_attr:
        return "attribute"
    if site.call.via_orig:
        return "orig"
    return "super" if site.bound else "call"


def _old_signature(ctx: ScanContext, site: CallSite) -> str | None:
    if ctx.old is None:
        return None
    sym = ctx.old.resolve(site.call.callee)
    params = (
        call_params(ctx.old, sym, bound=site.bound, raw_function=site.raw_function)
        if sym is not None
        else None
    )
    return render_params(params[0]) if params else None


def _moved_note(ctx: ScanContext, site: CallSite, callee: Symbol) -> str | None:
    """Where the patched class calls the same callee now, when that differs from the override."""
    patch = next((p for p in ctx.corpus.patches if p.name == site.call.patch), None)
    if patch is None or not patch.target:
        return None
    target = ctx.new.resolve(patch.target)
    if target is None or target.kind != "class":
        return None
    method = (site.call.in_function or "").rsplit(".", 1)[-1]
    sites = upstream_call_sites(ctx.new, target, callee)
    elsewhere = [s for s in sites if s[0].rsplit(".", 1)[-1] != method]
    if not elsewhere or len(elsewhere) < len(sites):
        return None  # the overridden method still makes the call itself (or nobody does)
    where, line, text = elsewhere[0]
    return f"{where} ({target.relpath}:{line}: {text})"


def _suggest(result, sig: str) -> str:
    parts = []
    if result.missing:
        parts.append("pass " + ", ".join(result.missing))
    if result.unexpected:
        parts.append("drop " + ", ".join(result.unexpected))
    if result.too_many:
        parts.append(f"pass {result.too_many} fewer positional argument(s)")
    return (", ".join(parts) or "update the call") + f" to match {sig}"


@register_check(codes=["RK302"])
def check_return_shapes(ctx: ScanContext) -> Iterator[Finding]:
    for unpack in [*unpackings(ctx.corpus), *self_unpackings(ctx.corpus)]:
        found = callee_return_shape(ctx.new, unpack.call.callee)
        if found is None:
            continue
        sym, shape = found
        if shape.unpacks_to(unpack.arity) is not False:
            continue
        old_tree = old_returns = None
        if ctx.old is not None:
            old = callee_return_shape(ctx.old, unpack.call.callee)
            if old is not None and old[1] != shape:
                old_tree = ctx.old.tree.version or ctx.old.tree.label
                old_returns = old[1].render()
        c = unpack.call
        record = UnpackingMismatch(
            c.callee, unpack.arity, sym.qualname, _ver(ctx), shape.render(), old_tree, old_returns
        )
        yield ctx.report(
            record,
            plugin=ctx.plugin_loc(c.relpath, unpack.line, c.in_function),
            upstream=ctx.upstream_loc(sym),
            suggestion=f"read the fields of the returned value instead of unpacking {unpack.arity}, "
            f"or adapt to the new arity",
        )
