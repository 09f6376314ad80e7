"""RK305/RK307: calls a patch or plugin subclass makes on self and through super().

Neither kind names an import, so RK301 never sees them. A removed or renamed method is
reported only when OLD is given and had it: at a single pin, a name the class lacks may
be one the plugin adds in ways no static reading follows.
"""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.binding import bind, render_params
from rebasekit.analysis.dispatch import dispatched_override
from rebasekit.analysis.pluginclasses import plugin_classes, replaced_names, upstream_class
from rebasekit.analysis.selfcalls import (
    Callee,
    ClassCall,
    check,
    class_calls,
    renamed_to,
    resolve_call,
)
from rebasekit.analysis.upstreamuses import uses_of
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Severity
from rebasekit.index import CodeIndex
from rebasekit.records import SelfCallBroken, SuperCallBroken


def _ver(index: CodeIndex) -> str:
    return index.tree.version or index.tree.label


def _old(ctx: ScanContext, call: ClassCall) -> tuple[str, Callee | None]:
    if ctx.old is None:
        return "unknown", None
    return resolve_call(ctx.corpus, ctx.old, call)


def _upstream_call(ctx: ScanContext, call: ClassCall, callee: Callee) -> str | None:
    """An upstream call of the method at NEW that binds: how upstream calls it now."""
    cls = upstream_class(ctx.new, call.owner)
    if cls is None:
        return None
    # a constructor is called by the class name; a method through self or any receiver
    name = cls.name if call.name == "__init__" else call.name
    for use in uses_of(ctx.new, cls, name):
        if bind(use.shape, callee.params).ok and (use.shape.positional or use.shape.keywords):
            return use.render()
    return None


@register_check(codes=["RK305", "RK307"])
def check_class_calls(ctx: ScanContext) -> Iterator[Finding]:
    replaced = replaced_names(ctx.corpus)
    for pc in plugin_classes(ctx.corpus):
        if pc.upstream in replaced:
            continue  # the plugin swaps that upstream class for its own
        for call in class_calls(ctx.corpus, pc, ctx.new.tree.version):
            if f"{pc.upstream}.{call.name}" in replaced:
                continue
            state, callee = resolve_call(ctx.corpus, ctx.new, call)
            loc = ctx.plugin_loc(pc.relpath, call.line, call.where)
            if state == "missing" and call.via == "self":
                yield from _removed(ctx, call, loc)
                continue
            if state != "found" or callee is None:
                continue
            result = check(call, callee)
            if result.ok:
                continue
            _, old_callee = _old(ctx, call)
            old_sig = render_params(old_callee.params) if old_callee is not None else None
            sig = render_params(callee.params)
            fields = dict(
                owner=pc.name,
                method=call.name,
                positional=call.shape.positional,
                keywords=tuple(call.shape.keywords),
                caller=call.where,
                upstream=callee.sym.qualname,
                tree=_ver(ctx.new),
                problems=tuple(result.problems),
                upstream_signature=sig,
                old_tree=_ver(ctx.old) if ctx.old is not None and old_sig else None,
                old_signature=old_sig if old_sig != sig else None,
                upstream_call=_upstream_call(ctx, call, callee),
            )
            record = (
                SelfCallBroken(state="unbound", **fields)
                if call.via == "self"
                else SuperCallBroken(base=pc.upstream, **fields)
            )
            why = (
                dispatched_override(
                    ctx.corpus, pc.node, call.method, call.name, call.line, call.shape
                )
                if call.via == "self"
                else None
            )
            found = ctx.report(
                record,
                plugin=loc,
                upstream=ctx.upstream_loc(callee.sym),
                severity=Severity.WARNING if why else None,
                suggestion=f"update the call to match {sig}",
            )
            if why:
                found = found.with_reason(f"likely cannot fail: {why}", "dispatched_to", why)
            yield found


def _removed(ctx: ScanContext, call: ClassCall, loc) -> Iterator[Finding]:
    if ctx.old is None:
        return
    old_state, old_callee = resolve_call(ctx.corpus, ctx.old, call)
    if old_state != "found" or old_callee is None:
        return
    cls = upstream_class(ctx.new, call.owner)
    new_name = renamed_to(ctx.old, ctx.new, call.owner.upstream, call.name)
    record = SelfCallBroken(
        owner=call.owner.name,
        method=call.name,
        positional=call.shape.positional,
        keywords=tuple(call.shape.keywords),
        caller=call.where,
        state="removed",
        upstream=cls.qualname if cls is not None else call.owner.upstream,
        tree=_ver(ctx.new),
        old_tree=_ver(ctx.old),
        old_signature=render_params(old_callee.params),
        renamed_to=new_name,
    )
    yield ctx.report(
        record,
        plugin=loc,
        upstream=ctx.upstream_loc(cls),
        suggestion=f"call {new_name} instead" if new_name else f"find what replaced {call.name}",
    )
