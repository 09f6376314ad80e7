"""RK310: starred unpackings of an upstream tuple whose length changed between the pins."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.callsites import callee_return_shape
from rebasekit.analysis.selfunpack import star_unpackings
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Severity
from rebasekit.records import StarredReturnShifted


@register_check(codes=["RK310"], needs=["base"], pairwise=True)
def check_starred_returns(ctx: ScanContext) -> Iterator[Finding]:
    base = ctx.base
    if base is None:
        return
    for unpack in star_unpackings(ctx.corpus):
        new = callee_return_shape(ctx.new, unpack.call.callee)
        old = callee_return_shape(base, unpack.call.callee)
        if new is None or old is None:
            continue
        (sym, now), (_, was) = new, old
        if now.opaque or was.opaque or not now.arities or not was.arities:
            continue  # a length is claimed only where every return is a visible tuple
        if now.arities == was.arities:
            continue
        short = min(now.arities) < unpack.prefix
        c = unpack.call
        record = StarredReturnShifted(
            c.callee,
            unpack.prefix,
            callee=sym.qualname,
            base_version=base.tree.version or base.tree.label,
            new_version=ctx.new.tree.version or ctx.new.tree.label,
            old_arities=tuple(sorted(was.arities)),
            new_arities=tuple(sorted(now.arities)),
            too_short=short,
        )
        yield ctx.report(
            record,
            plugin=ctx.plugin_loc(c.relpath, unpack.line, c.in_function),
            upstream=ctx.upstream_loc(sym),
            severity=Severity.ERROR if short else None,
            suggestion="check which element each name (and the starred rest) now receives "
            "in the upstream return statement",
        )
