"""RK314: plugin calls whose positional argument now fills another upstream parameter."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.attrcalls import attribute_calls
from rebasekit.analysis.binding import CallShape, bind, render_params
from rebasekit.analysis.callsites import CallSite, call_sites
from rebasekit.analysis.defnodes import call_params
from rebasekit.analysis.forwarding import forwards
from rebasekit.analysis.pluginclasses import plugin_classes
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding
from rebasekit.index import CodeIndex
from rebasekit.index.models import Param, ParamKind
from rebasekit.records import PositionalArgumentShifted

_POSITIONAL = (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)


def _sites(ctx_corpus, index: CodeIndex) -> dict[tuple[str, int, str | None], CallSite]:
    """Call sites by place; a line with two calls of the same function is left out."""
    out: dict[tuple[str, int, str | None], CallSite] = {}
    clashes: set[tuple[str, int, str | None]] = set()
    for site in [*call_sites(ctx_corpus, index), *attribute_calls(ctx_corpus, index)]:
        c = site.call
        key = (c.relpath, c.lineno, c.in_function)
        if key in out and out[key].call.callee != c.callee:
            clashes.add(key)
        out[key] = site
    return {k: v for k, v in out.items() if k not in clashes}


def _params(index: CodeIndex, site: CallSite) -> list[Param] | None:
    sym = index.resolve(site.call.callee)
    if sym is None:
        return None
    found = call_params(index, sym, bound=site.bound, raw_function=site.raw_function)
    return found[0] if found is not None else None


def _delegated(ctx: ScanContext) -> set[tuple[str, int, int, str]]:
    """(file, line, position, parameter) an override forwards by position to its original."""
    out: set[tuple[str, int, int, str]] = set()
    for pc in plugin_classes(ctx.corpus):
        for fwd in forwards(ctx.corpus, pc, ctx.new.tree.version):
            out |= {(pc.relpath, fwd.line, pos, name) for pos, name in fwd.forwarded}
    return out


@register_check(codes=["RK314"], needs=["base"], pairwise=True)
def check_shifted_positionals(ctx: ScanContext) -> Iterator[Finding]:
    base = ctx.base
    if base is None or base is ctx.new:
        return
    old_sites = _sites(ctx.corpus, base)
    delegated = _delegated(ctx)
    for key, site in _sites(ctx.corpus, ctx.new).items():
        c = site.call
        was = old_sites.get(key)
        if was is None or c.star_args or c.positional == 0:
            continue
        old_callee, callee = base.resolve(was.call.callee), ctx.new.resolve(c.callee)
        if old_callee is None or callee is None or old_callee.qualname != callee.qualname:
            continue  # another function is called now: not a parameter that went away
        old_params, new_params = _params(base, was), _params(ctx.new, site)
        if old_params is None or new_params is None:
            continue
        shape = CallShape(c.positional, tuple(c.keywords), c.star_args, c.star_kwargs)
        if not bind(shape, old_params).ok or not bind(shape, new_params).ok:
            continue  # broken before, or broken now: RK301 reports a call that does not bind
        old_pos = [p for p in old_params if p.kind in _POSITIONAL]
        new_pos = [p for p in new_params if p.kind in _POSITIONAL]
        new_names = {p.name for p in new_params}
        for position in range(min(c.positional, len(old_pos))):
            name = old_pos[position].name
            if name in new_names or (c.relpath, c.lineno, position, name) in delegated:
                continue  # still there, or an override forwarding it: RK218 reports that
            if position >= len(new_pos):
                continue  # swallowed by ``*args``: a pass-through that names nothing
            lands = new_pos[position].name
            record = PositionalArgumentShifted(
                callee.qualname,
                name,
                caller=c.in_function or "<module>",
                position=position,
                lands_in=lands,
                old_tree=base.tree.version or base.tree.label,
                tree=ctx.new.tree.version or ctx.new.tree.label,
                old_signature=render_params(old_params),
                new_signature=render_params(new_params),
            )
            yield ctx.report(
                record,
                plugin=ctx.plugin_loc(c.relpath, c.lineno, c.in_function),
                upstream=ctx.upstream_loc(callee),
                suggestion=f"drop the argument for {name}; pass the others by keyword",
            )
