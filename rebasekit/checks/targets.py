"""RK2xx (targets): patch targets exist, ``_orig_`` aliases name real attributes,
and overrides still replace something."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.checks.registry import register_check
from rebasekit.checks.suggest import moved_candidates
from rebasekit.context import ScanContext
from rebasekit.corpus.models import PatchClass
from rebasekit.findings import Finding
from rebasekit.index import CodeIndex, Resolution, Status, Symbol
from rebasekit.records import (
    OrigAliasMissing,
    OverrideTargetRemoved,
    PatchTargetMissing,
    PatchTargetMoved,
)


def resolve_target(index: CodeIndex, patch: PatchClass) -> Resolution | None:
    return index.lookup(patch.target) if patch.target else None


def target_member(index: CodeIndex, target: Symbol, name: str) -> Resolution:
    """``name`` on a class (along its MRO) or a module target."""
    if target.kind == "class":
        sym = index.lookup_member(target, name)
        if sym is not None:
            return Resolution(Status.FOUND, sym)
        if any(k.external_bases for k in index.mro(target)):
            return Resolution(Status.DYNAMIC, container=target, missing=name)
        return Resolution(Status.MISSING, container=target, missing=name)
    return index.lookup(f"{target.qualname}.{name}")


@register_check(codes=["RK201", "RK202"])
def check_targets(ctx: ScanContext) -> Iterator[Finding]:
    for patch in ctx.corpus.patches:
        res = resolve_target(ctx.new, patch)
        if res is None or res.status in (Status.FOUND, Status.DYNAMIC):
            continue
        loc = ctx.plugin_loc(patch.relpath, patch.lineno, patch.name)
        name = patch.target.rsplit(".", 1)[-1]
        near = patch.target.rsplit(".", 1)[0]
        cands = moved_candidates(ctx.new, name, near, kinds=("class",))
        if not cands:
            mods = [m for m in _module_named(ctx.new, name) if m != patch.target]
            if mods:
                yield ctx.report(
                    PatchTargetMoved(patch.target, mods[0]),
                    plugin=loc,
                    suggestion=f"import {mods[0]} and patch that",
                )
                continue
        if cands:
            best = cands[0]
            yield ctx.report(
                PatchTargetMoved(patch.target, best.qualname, name, best.module),
                plugin=loc,
                upstream=ctx.upstream_loc(best),
                suggestion=f"from {best.module} import {name}",
            )
        else:
            yield ctx.report(
                PatchTargetMissing(patch.target, ctx.new.tree.label),
                plugin=loc,
                upstream=ctx.upstream_loc(res.container),
                suggestion="find what replaced it upstream and retarget or drop the patch",
            )


def _module_named(index: CodeIndex, last: str) -> list[str]:
    return [m for m in index.module_names() if m.rsplit(".", 1)[-1] == last]


@register_check(codes=["RK220"])
def check_orig_aliases(ctx: ScanContext) -> Iterator[Finding]:
    for patch in ctx.corpus.patches:
        res = resolve_target(ctx.new, patch)
        if res is None or not res.found or res.symbol is None:
            continue
        for alias in patch.orig_aliases:
            member = target_member(ctx.new, res.symbol, alias.attr)
            if member.status is Status.MISSING:
                yield ctx.report(
                    OrigAliasMissing(alias.alias, patch.name, alias.attr, res.symbol.qualname),
                    plugin=ctx.plugin_loc(
                        patch.relpath, alias.lineno, f"{patch.name}.{alias.alias}"
                    ),
                    upstream=ctx.upstream_loc(res.symbol),
                    suggestion=f"find what replaced {alias.attr} upstream; the class body raises AttributeError at import",
                )


@register_check(codes=["RK203"], pairwise=True)
def check_removed_overrides(ctx: ScanContext) -> Iterator[Finding]:
    if ctx.old is None:
        return
    for patch in ctx.corpus.patches:
        new_res, old_res = resolve_target(ctx.new, patch), resolve_target(ctx.old, patch)
        if not (new_res and new_res.found and old_res and old_res.found):
            continue
        for attr in patch.attributes:
            # Also when an ``_orig_`` alias captured it (RK220 reports the alias): the
            # override is what has to move, and the finding names it.
            was = target_member(ctx.old, old_res.symbol, attr.name)
            now = target_member(ctx.new, new_res.symbol, attr.name)
            if was.found and now.status is Status.MISSING:
                yield ctx.report(
                    OverrideTargetRemoved(
                        attr.name,
                        patch.name,
                        was.symbol.qualname,
                        ctx.old.tree.version or ctx.old.tree.label,
                        new_res.symbol.qualname,
                    ),
                    plugin=ctx.plugin_loc(patch.relpath, attr.lineno, f"{patch.name}.{attr.name}"),
                    upstream=ctx.upstream_loc(new_res.symbol),
                    suggestion="find the code that took over its job upstream and move the override there",
                )
