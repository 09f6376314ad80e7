"""RK303/RK304: instance attributes an override reads on a patched instance."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.attrs import attribute_uses, kind_changed, provision
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Location, Severity
from rebasekit.records import AttributeGone, AttributeKindChanged


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
        for use in attribute_uses(ctx.corpus, patch, per_method=True):
            new_p = provision(ctx.new, cls, use.attr)
            old_p = (
                provision(old, old_cls, use.attr)
                if old_cls is not None and old is not None
                else None
            )
            loc = ctx.plugin_loc(patch.relpath, use.line, f"{patch.name}.{use.method}")
            accessors = ", ".join("." + a for a in use.accessors)
            names = dict(
                target=patch.target, attribute=use.attr, patch=patch.name, method=use.method
            )
            if not new_p.provided:
                if external and (old_p is None or not old_p.provided):
                    continue  # may come from an out-of-tree base: cannot tell
                was: dict[str, str | None] = {}
                if old_p is not None and old_p.provided:
                    was = dict(old_version=old.tree.version or old.tree.label)
                    if old_p.assignments:
                        where, value = old_p.assignments[0]
                        was.update(old_where=where, old_value=value.source)
                elif old_p is not None:
                    was = dict(also_missing_at=old.tree.version or old.tree.label)
                record = AttributeGone(
                    **names,
                    cls=cls.qualname,
                    tree=ctx.new.tree.version or ctx.new.tree.label,
                    **was,
                )
                # "No longer" is drift (an error); "never upstream's" is the weaker claim
                # that the plugin sets the attribute somewhere this analysis does not see.
                yield ctx.report(
                    record,
                    plugin=loc,
                    upstream=ctx.upstream_loc(cls),
                    suggestion=(
                        f"find what replaced {use.attr} in {cls.qualname}.__init__ and read that instead"
                        if record.removed
                        else f"check where the plugin sets self.{use.attr}; if nowhere, the read fails"
                    ),
                    severity=None if record.removed else Severity.WARNING,
                )
                continue
            if old_p is None or not kind_changed(old_p, new_p):
                continue
            (ow, ov), (nw, nv) = old_p.assignments[0], new_p.assignments[0]
            record = AttributeKindChanged(
                **names,
                cls=cls.name,
                accessors=tuple(use.accessors),
                new_kind=nv.render(),
                new_value=nv.source,
                new_where=nw,
                old_kind=ov.render(),
                old_value=ov.source,
                old_where=ow,
                old_version=old.tree.version,
            )
            yield ctx.report(
                record,
                plugin=loc,
                upstream=Location(cls.relpath, nv.line, None, f"{cls.qualname}.{use.attr}"),
                suggestion=f"check every use of self.{use.attr}{accessors and ' (' + accessors + ')'} against the new value's type",
            )
