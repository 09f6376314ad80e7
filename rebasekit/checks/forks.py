"""RK403/RK404: forked plugin files against upstream changes since the recorded version."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.drift.bodies import unified
from rebasekit.drift.forkscan import ForkState, fork_states
from rebasekit.findings import Finding, Location, Severity


@register_check(codes=["RK403", "RK404"])
def check_forks(ctx: ScanContext) -> Iterator[Finding]:
    for state in fork_states(ctx.corpus, ctx.old, ctx.new):
        if state.candidate is not None:
            yield _undeclared(ctx, state)
        yield from _drifted(ctx, state)


def _undeclared(ctx: ScanContext, state: ForkState) -> Finding:
    cand, decl = state.candidate, state.decl
    assert cand is not None
    return ctx.finding(
        "RK404",
        f"{decl.plugin_relpath} copies {cand.upstream_path} ({len(cand.similar)} of {len(cand.shared)} shared "
        f"definitions alike: {', '.join(cand.similar)}) but declares no fork; treated as a fork at {decl.version}",
        plugin=ctx.plugin_loc(decl.plugin_relpath, 1, None),
        upstream=Location(cand.upstream_path),
        subject=cand.upstream_path,
        suggestion=f"add `{decl.declaration()}` as the file's first line (or a [tool.rebasekit.forks] entry)",
        declaration=decl.declaration(),
        shared=cand.shared,
        similar=cand.similar,
    )


def _drifted(ctx: ScanContext, state: ForkState) -> Iterator[Finding]:
    decl, drift = state.decl, state.drift
    loc = ctx.plugin_loc(decl.plugin_relpath, decl.header_line or 1, None)
    new_ver = ctx.new.tree.version or ctx.new.tree.label
    if state.base_error:
        yield ctx.finding(
            "RK403",
            f"fork {decl.plugin_relpath}: cannot read the recorded upstream ({state.base_error})",
            plugin=loc,
            severity=Severity.WARNING,
            subject=f"{decl.upstream_path}|base",
            suggestion="fix the fork declaration's path@version",
        )
        return
    if drift is None:
        return
    if drift.missing_upstream:
        yield ctx.finding(
            "RK403",
            f"fork {decl.plugin_relpath}: upstream {decl.upstream_path} no longer exists "
            f"at {new_ver}",
            plugin=loc,
            subject=f"{decl.upstream_path}|gone",
            suggestion="find where its definitions moved (rebasekit scan-imports) and re-fork",
        )
        return
    if not drift.changes and not drift.module_level_changed:
        return
    forked = drift.forked_changes
    groups = "; ".join(
        f"{c.qualname} {c.status}" + (" [forked]" if c.forked else "") for c in drift.changes
    )
    if drift.module_level_changed:
        groups += ("; " if groups else "") + "module-level code changed"
    diffs = {}
    for c in drift.changes:
        diffs[c.qualname] = unified(
            c.old.source if c.old else "",
            c.new.source if c.new else "",
            f"{decl.upstream_path}@{decl.version}",
            f"{decl.upstream_path}@{new_ver}",
        )
    yield ctx.finding(
        "RK403",
        f"fork {decl.plugin_relpath} of {decl.upstream_path}@{decl.version}: upstream changed by {new_ver}: "
        f"{groups}"
        + (
            f" — {len(forked)} forked definition(s) affected: {', '.join(c.qualname for c in forked)}"
            if forked
            else " — none of the forked definitions"
        ),
        plugin=loc,
        upstream=Location(decl.upstream_path),
        severity=None if forked else Severity.INFO,
        subject=f"{decl.upstream_path}|{','.join(c.qualname for c in drift.changes)}",
        suggestion=(
            f"run `rebasekit port --to {new_ver}` to merge, then bump the fork header to @{new_ver}"
            if forked
            else f"bump the fork declaration to @{new_ver} after review"
        ),
        changes=[
            {"qualname": c.qualname, "status": c.status, "forked": c.forked} for c in drift.changes
        ],
        diffs=diffs,
        declared_by=decl.origin,
    )
