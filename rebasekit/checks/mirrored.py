"""RK402: overrides whose upstream base body changed between the base pin and the scanned tree."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.overrides import OverrideDrift, override_drifts
from rebasekit.analysis.wrapdeps import touched, wrapper_use
from rebasekit.astutil import FuncNode
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Severity
from rebasekit.index.cache import DataStore, content_memo
from rebasekit.records import BaseBodyChanged


@register_check(codes=["RK402"], needs=["base"], pairwise=True)
def check_mirrored_bodies(ctx: ScanContext) -> Iterator[Finding]:
    base = ctx.base
    if base is None:
        return
    store = ctx.new.cache.derived()
    for od in override_drifts(ctx.corpus, base, ctx.new):
        kind = (
            "copies"
            if od.mirrors
            else ("wraps" if od.attr in _orig_targets(od.patch) else "replaces")
        )
        touches: tuple[str, ...] = ()
        if kind == "wraps":
            found = _cached_touches(store, ctx.corpus.source_text(od.patch.relpath), od)
            if found is not None and not found:
                continue  # a pass-through of the original: its body change is not the wrapper's
            touches = found or ()
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
            touches=touches,
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


def _cached_touches(
    store: DataStore, plugin_text: str, od: OverrideDrift
) -> tuple[str, ...] | None:
    """:func:`_wrapper_touches`, kept in ``store`` under the texts it reads.

    The wrapper is the first definition of its qualname in the plugin file's text; the
    old and new originals are parsed from their symbols' own lines (``symbol_definition``).
    Walking the three bodies is what a warm scan spent most of this check's time on.
    """
    parts = (
        plugin_text,
        od.ours.qualname,
        tuple(sorted(a.alias for a in od.patch.orig_aliases)),
        od.attr,
        (od.old_sym.name, od.old_sym.source),
        (od.new_sym.name, od.new_sym.source),
    )
    return content_memo(
        store, "wrapper_touches", parts, lambda: _wrapper_touches(od), tuple[str, ...] | None
    )


def _wrapper_touches(od: OverrideDrift) -> tuple[str, ...] | None:
    """Where the original's change meets the wrapper; None when the wrapper is not understood.

    Not understood: the bodies are not functions, or no call to the original was found
    (then the wrapper may reach it some other way, and every change is reported).
    """
    ours, old, new = od.ours.node, od.old_def.node, od.new_def.node
    if not all(isinstance(n, FuncNode) for n in (ours, old, new)):
        return None
    use = wrapper_use(ours, {a.alias for a in od.patch.orig_aliases}, od.attr)
    if not use.calls_original:
        return None
    return touched(use, old, new)
