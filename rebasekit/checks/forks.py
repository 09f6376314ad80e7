"""RK403/RK404: forked plugin files against upstream changes since the recorded version."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.bodies import unified
from rebasekit.analysis.forkstate import ForkState, fork_states
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Location, Severity
from rebasekit.records import ForkDrifted, UndeclaredFork


@register_check(codes=["RK403", "RK404"], needs=["forks"])
def check_forks(ctx: ScanContext) -> Iterator[Finding]:
    for state in fork_states(ctx.corpus, ctx.forks, ctx.old, ctx.new):
        if state.candidate is not None:
            yield _undeclared(ctx, state)
        yield from _drifted(ctx, state)


def _undeclared(ctx: ScanContext, state: ForkState) -> Finding:
    cand, decl = state.candidate, state.decl
    assert cand is not None
    record = UndeclaredFork(
        cand.upstream_path,
        fork=decl.plugin_relpath,
        version=decl.version,
        shared=tuple(cand.shared),
        similar=tuple(cand.similar),
        declaration=decl.declaration(),
    )
    return ctx.report(
        record,
        plugin=ctx.plugin_loc(decl.plugin_relpath, 1, None),
        upstream=Location(cand.upstream_path),
        suggestion=f"add `{decl.declaration()}` as the file's first line (or a [tool.rebasekit.forks] entry)",
    )


def _drifted(ctx: ScanContext, state: ForkState) -> Iterator[Finding]:
    decl, drift = state.decl, state.drift
    loc = ctx.plugin_loc(decl.plugin_relpath, decl.header_line or 1, None)
    new_ver = ctx.new.tree.version or ctx.new.tree.label
    names = dict(fork=decl.plugin_relpath, version=decl.version, new_version=new_ver)
    if state.base_error:
        yield ctx.report(
            ForkDrifted(decl.upstream_path, "unreadable", reason=state.base_error, **names),
            plugin=loc,
            severity=Severity.WARNING,
            suggestion="fix the fork declaration's path@version",
        )
        return
    if drift is None:
        return
    if drift.missing_upstream:
        yield ctx.report(
            ForkDrifted(decl.upstream_path, "gone", **names),
            plugin=loc,
            suggestion="find where its definitions moved (rebasekit scan-imports) and re-fork",
        )
        return
    if not drift.changes and not drift.module_level_changed:
        return
    forked = drift.forked_changes
    diffs = {
        c.qualname: unified(
            c.old.source if c.old else "",
            c.new.source if c.new else "",
            f"{decl.upstream_path}@{decl.version}",
            f"{decl.upstream_path}@{new_ver}",
        )
        for c in drift.changes
    }
    record = ForkDrifted(
        decl.upstream_path,
        "changed",
        tuple(c.qualname for c in drift.changes),
        **names,
        changes=tuple(
            {"qualname": c.qualname, "status": c.status, "forked": c.forked} for c in drift.changes
        ),
        module_level_changed=drift.module_level_changed,
        diffs=diffs,
        declared_by=decl.origin,
    )
    yield ctx.report(
        record,
        plugin=loc,
        upstream=Location(decl.upstream_path),
        severity=None if forked else Severity.INFO,
        suggestion=(
            f"run `rebasekit port --to {new_ver}` to merge, then bump the fork header to @{new_ver}"
            if forked
            else f"bump the fork declaration to @{new_ver} after review"
        ),
    )
