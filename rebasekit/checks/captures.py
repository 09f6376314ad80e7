"""RK221: upstream attributes captured outside patch classes that the tree no longer has."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from rebasekit.analysis.captures import captures
from rebasekit.analysis.pluginclasses import patched_names, replaced_names
from rebasekit.analysis.selfcalls import renamed_to
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.symbols import Status
from rebasekit.records import CapturedAttributeMissing


def _members(index: CodeIndex, container: Symbol) -> list[str]:
    if container.kind == "class":
        return sorted({m for k in index.mro(container) for m in k.members})
    facts = index.module(container.qualname)
    return sorted(facts.defs) if facts is not None else []


def _added_by_patches(ctx: ScanContext, container: Symbol) -> set[str]:
    if container.kind == "class":
        return patched_names(ctx.corpus, ctx.new, container)
    names: set[str] = set()
    for patch in ctx.corpus.patches:
        target = ctx.new.resolve(patch.target) if patch.target else None
        if target is not None and target.qualname == container.qualname:
            names |= {a.name for a in patch.attributes}
    return names


@register_check(codes=["RK221"])
def check_captures(ctx: ScanContext) -> Iterator[Finding]:
    envs = f"{ctx.config.upstream_package}.envs."
    replaced = replaced_names(ctx.corpus)
    for cap in captures(ctx.corpus, ctx.new.tree.version):
        if cap.target.startswith(envs):
            continue  # RK308 reads vllm.envs
        if cap.target in replaced:
            continue  # the plugin assigns it itself (save-and-restore wrappers)
        res = ctx.new.lookup(cap.target)
        if res.status is not Status.MISSING or res.container is None:
            continue
        container = res.container
        if container.kind not in ("class", "module") or res.missing is None:
            continue
        if res.missing != cap.target.rsplit(".", 1)[-1]:
            continue  # an inner part is missing: the import checks report the module/name
        if res.missing in _added_by_patches(ctx, container):
            continue
        was = ctx.old is not None and ctx.old.lookup(cap.target).found
        renamed = (
            renamed_to(ctx.old, ctx.new, container.qualname, res.missing)
            if was and ctx.old is not None and container.kind == "class"
            else None
        )
        close = (
            [renamed]
            if renamed
            else difflib.get_close_matches(
                res.missing, _members(ctx.new, container), n=1, cutoff=0.75
            )
        )
        record = CapturedAttributeMissing(
            cap.target,
            cap.name,
            scope=cap.scope,
            container=container.qualname,
            tree=ctx.new.tree.version or ctx.new.tree.label,
            old_tree=(ctx.old.tree.version or ctx.old.tree.label) if was and ctx.old else None,
            similar=close[0] if close else None,
        )
        yield ctx.report(
            record,
            plugin=ctx.plugin_loc(
                cap.relpath, cap.line, None if cap.scope == "module" else cap.scope
            ),
            upstream=ctx.upstream_loc(container),
            suggestion=(
                f"capture {close[0]} instead"
                if close
                else f"guard the capture or drop it: {res.missing} is gone"
            ),
        )
