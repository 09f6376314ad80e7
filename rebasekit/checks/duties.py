"""RK312: a replacing override that does not assign an attribute upstream's new version does."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.attrs import patch_own_names
from rebasekit.analysis.duties import cached_new_duties
from rebasekit.analysis.overrides import override_drifts
from rebasekit.analysis.wrapdeps import wrapper_use
from rebasekit.astutil import FuncNode
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Location
from rebasekit.records import ReplacedMethodDuty


@register_check(codes=["RK312"], needs=["base"], pairwise=True)
def check_replaced_duties(ctx: ScanContext) -> Iterator[Finding]:
    base = ctx.base
    if base is None:
        return
    for od in override_drifts(ctx.corpus, base, ctx.new):
        ours = od.ours.node
        if not isinstance(ours, FuncNode):
            continue
        aliases = {a.alias for a in od.patch.orig_aliases if a.attr == od.attr}
        if wrapper_use(ours, aliases, od.attr).calls_original:
            continue  # the original still runs and assigns what it assigns
        cls = ctx.new.resolve(od.patch.target or "")
        if cls is None or cls.kind != "class":
            continue
        own = patch_own_names(ctx.corpus, od.patch)
        for duty in cached_new_duties(ctx.new, cls, od.attr, od.old_sym, od.new_sym):
            if duty.attr in own:
                continue
            record = ReplacedMethodDuty(
                od.patch.target or "",
                od.attr,
                duty.attr,
                patch=od.patch.name,
                upstream=od.new_sym.qualname,
                reader=duty.reader,
                reader_at=f"{cls.relpath}:{duty.reader_line}",
                base_version=base.tree.version or base.tree.label,
                new_version=ctx.new.tree.version or ctx.new.tree.label,
            )
            yield ctx.report(
                record,
                plugin=ctx.plugin_loc(od.patch.relpath, od.attr_line, f"{od.patch.name}.{od.attr}"),
                upstream=Location(
                    od.new_sym.relpath, duty.assigned_line, None, f"{cls.qualname}.{duty.attr}"
                ),
                suggestion=f"assign self.{duty.attr} in the replacement as upstream's "
                f"{od.attr} now does",
            )
