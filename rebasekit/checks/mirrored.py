"""RK402: overrides whose upstream base body changed between the base pin and the scanned tree."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.overrides import override_drifts
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Severity


@register_check(codes=["RK402"], needs=["base"])
def check_mirrored_bodies(ctx: ScanContext) -> Iterator[Finding]:
    base = ctx.base
    if base is None:
        return
    for od in override_drifts(ctx.corpus, base, ctx.new):
        kind = (
            "copies"
            if od.mirrors
            else ("wraps" if od.attr in _orig_targets(od.patch) else "replaces")
        )
        removed, added = od.changed
        yield ctx.finding(
            "RK402",
            f"{od.patch.name}.{od.attr} {kind} {od.new_sym.qualname}, whose body changed upstream "
            f"between {base.tree.version} and {ctx.new.tree.version} (-{removed}/+{added} lines)",
            plugin=ctx.plugin_loc(od.patch.relpath, od.attr_line, f"{od.patch.name}.{od.attr}"),
            upstream=ctx.upstream_loc(od.new_sym),
            severity=None if od.mirrors else Severity.INFO,
            subject=f"{od.new_sym.qualname}",
            suggestion=(
                "run `rebasekit port --to "
                + (ctx.new.tree.version or "NEW")
                + "` to merge the upstream "
                "change into the copy, or review the diff"
                if od.mirrors
                else "review the diff: the wrapper's pre/post logic may rely on the old behaviour"
            ),
            diff=od.diff,
            mirrors=od.mirrors,
            similarity=round(od.similarity, 2),
        )


def _orig_targets(patch) -> set[str]:
    """Attributes whose original the patch keeps (and so probably calls)."""
    return {a.attr for a in patch.orig_aliases}
