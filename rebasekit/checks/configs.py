"""RK313: plugin classes reading an upstream config field whose default or finalised value changed."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.configdefaults import (
    ConfigRead,
    changed_fields,
    config_attr_types,
    config_reads,
    config_values,
)
from rebasekit.analysis.pluginclasses import plugin_classes
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Location
from rebasekit.records import ConfigDefaultChanged


@register_check(codes=["RK313"], needs=["base"], pairwise=True)
def check_config_defaults(ctx: ScanContext) -> Iterator[Finding]:
    base = ctx.base
    if base is None or base is ctx.new:
        return
    package = ctx.config.upstream_package
    old_values = config_values(base, package)
    new_values = config_values(ctx.new, package)
    watched = changed_fields(old_values, new_values)
    if not watched:
        return
    reads = config_reads(
        ctx.corpus, ctx.new, plugin_classes(ctx.corpus), watched, config_attr_types(new_values)
    )
    grouped: dict[tuple[str, str, tuple[str, str]], list[ConfigRead]] = {}
    for read in reads:
        grouped.setdefault((read.relpath, read.owner, read.field), []).append(read)
    for (relpath, owner, (cls, name)), group in sorted(grouped.items()):
        key = f"{cls}:{name}"
        was, now = old_values[key], new_values[key]
        first = min(group, key=lambda r: r.line)
        added = tuple(v for v in now.assigned if v not in was.assigned)
        removed = tuple(v for v in was.assigned if v not in now.assigned)
        moved = set(added) | set(removed)
        where = tuple(
            dict.fromkeys(q for v, q in (*now.assigned_in, *was.assigned_in) if v in moved)
        )
        record = ConfigDefaultChanged(
            cls,
            name,
            owner=owner,
            readers=tuple(dict.fromkeys(f"{owner}.{r.method}" for r in group if r.method)),
            read_as=first.text,
            old_default=was.default,
            new_default=now.default,
            added=added,
            removed=removed,
            assigned_in=where,
            old_version=base.tree.version,
            new_version=ctx.new.tree.version,
        )
        yield ctx.report(
            record,
            plugin=ctx.plugin_loc(relpath, first.line, owner),
            upstream=_upstream_place(ctx, cls, where),
            suggestion=(
                "check the branches that read this field (and the enum values compared "
                "against) under the new default"
            ),
        )


def _upstream_place(ctx: ScanContext, cls: str, finalisers: tuple[str, ...]) -> Location | None:
    """The finaliser whose assignment changed, else (a changed default) the config class."""
    for qual in finalisers:
        sym = ctx.new.resolve(qual)
        if sym is not None:
            return ctx.upstream_loc(sym)
    return ctx.upstream_loc(ctx.new.resolve(cls))
