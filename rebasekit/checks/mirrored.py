"""RK402: overrides whose upstream base body changed between the base pin and the scanned tree."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.overrides import override_drifts
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Severity
from rebasekit.records import BaseBodyChanged


@register_check(codes=["RK402"], needs=["base"], pairwise=True)
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
        record = BaseBodyChanged(
            od.new_sym.qualname,
            patch=od.patch.name,
            attribute=od.attr,
            relation=kind,
            base_version=base.tree.version,
            new_version=ctx.new.tree.version,
            removed=removed,
            added=added,
            mirrors=od.mirrors,
            similarity=round(od.similarity, 2),
            diff=od.diff,
        )
        yield ctx.report(
            record,
            plugin=ctx.plugin_loc(od.patch.relpath, od.attr_line, f"{od.patch.name}.{od.attr}"),
            upstream=ctx.upstream_loc(od.new_sym),
            severity=None if od.mirrors else Severity.INFO,
            suggestion=(
                "run `rebasekit port --to "
                + (ctx.new.tree.version or "NEW")
                + "` to merge the upstream "
                "change into the copy, or review the diff"
                if od.mirrors
                else "review the diff: the wrapper's pre/post logic may rely on the old behaviour"
            ),
        )


def _orig_targets(patch) -> set[str]:
    """Attributes whose original the patch keeps (and so probably calls)."""
    return {a.attr for a in patch.orig_aliases}
