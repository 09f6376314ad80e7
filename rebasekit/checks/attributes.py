"""RK303/RK304: instance attributes an override reads on a patched instance."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.attrs import attribute_uses, kind_changed, provision
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Location


@register_check(codes=["RK303", "RK304"], needs=["base"])
def check_instance_attributes(ctx: ScanContext) -> Iterator[Finding]:
    old = ctx.base
    for patch in ctx.corpus.patches:
        if not patch.target:
            continue
        cls = ctx.new.resolve(patch.target)
        if cls is None or cls.kind != "class":
            continue
        old_cls = old.resolve(patch.target) if old is not None else None
        if old_cls is not None and old_cls.kind != "class":
            old_cls = None
        external = any(k.external_bases for k in ctx.new.mro(cls))
        for use in attribute_uses(ctx.corpus, patch):
            new_p = provision(ctx.new, cls, use.attr)
            old_p = (
                provision(old, old_cls, use.attr)
                if old_cls is not None and old is not None
                else None
            )
            loc = ctx.plugin_loc(patch.relpath, use.line, f"{patch.name}.{use.method}")
            accessors = ", ".join("." + a for a in use.accessors)
            if not new_p.provided:
                if external and (old_p is None or not old_p.provided):
                    continue  # may come from an out-of-tree base: cannot tell
                was = ""
                if old_p is not None and old_p.assignments:
                    where, value = old_p.assignments[0]
                    was = f"; at {old.tree.version} {where} assigned it from `{value.source}`"
                yield ctx.finding(
                    "RK303",
                    f"{patch.name}.{use.method} reads self.{use.attr}, but {cls.qualname} (with its bases) "
                    f"no longer assigns or defines {use.attr} at {ctx.new.tree.version or ctx.new.tree.label}{was}",
                    plugin=loc,
                    upstream=ctx.upstream_loc(cls),
                    subject=f"{patch.target}.{use.attr}",
                    suggestion=f"find what replaced {use.attr} in {cls.qualname}.__init__ and read that instead",
                    attribute=use.attr,
                )
                continue
            if old_p is None or not kind_changed(old_p, new_p):
                continue
            (ow, ov), (nw, nv) = old_p.assignments[0], new_p.assignments[0]
            yield ctx.finding(
                "RK304",
                f"{patch.name}.{use.method} reads self.{use.attr}{' (uses ' + accessors + ')' if accessors else ''}; "
                f"{cls.name} now assigns it {nv.render()} (`{nv.source}` in {nw}) instead of {ov.render()} "
                f"(`{ov.source}` in {ow} at {old.tree.version})",
                plugin=loc,
                upstream=Location(cls.relpath, nv.line, None, f"{cls.qualname}.{use.attr}"),
                subject=f"{patch.target}.{use.attr}",
                suggestion=f"check every use of self.{use.attr}{accessors and ' (' + accessors + ')'} against the new value's type",
                attribute=use.attr,
                old_value=ov.source,
                new_value=nv.source,
            )
