"""RK1xx: every upstream import of the plugin still resolves in the tree.

Resolution goes through the index (re-exports, star imports, lazy export tables), so
only names Python itself could not import are reported. Imports guarded by
``if TYPE_CHECKING:`` or ``try/except ImportError`` are reported as warnings.
"""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.checks.registry import register_check
from rebasekit.checks.suggest import moved_candidates, renamed_candidate
from rebasekit.context import ScanContext
from rebasekit.corpus.models import PluginImport
from rebasekit.findings import Finding, Severity
from rebasekit.index import Status


def _severity(ctx: ScanContext, code: str, imp: PluginImport) -> Severity | None:
    if imp.guard == "try":
        return Severity.INFO  # the plugin already handles the ImportError
    return Severity.WARNING if imp.guard == "type_checking" else None


def _guard_note(imp: PluginImport) -> str:
    return {
        "type_checking": " (under TYPE_CHECKING)",
        "try": " (inside try/except ImportError)",
    }.get(imp.guard or "", "")


@register_check(codes=["RK101", "RK102", "RK103", "RK104", "RK105"])
def check_imports(ctx: ScanContext) -> Iterator[Finding]:
    for imp in ctx.corpus.imports:
        yield from _check_one(ctx, imp)


def _check_one(ctx: ScanContext, imp: PluginImport) -> Iterator[Finding]:
    new = ctx.new
    loc = ctx.plugin_loc(imp.relpath, imp.lineno, imp.in_function)
    note = _guard_note(imp)
    common = dict(plugin=loc, subject=imp.target, guard=imp.guard)
    if new.module(imp.module) is None:
        suggestion = None
        if imp.name and imp.name != "*":
            cands = moved_candidates(new, imp.name, imp.module)
            if cands:
                suggestion = f"from {cands[0].module} import {imp.name}"
        yield ctx.finding(
            "RK101",
            f"module {imp.module} does not exist in {new.tree.label}{note}",
            suggestion=suggestion,
            severity=_severity(ctx, "RK101", imp),
            **common,
        )
        return
    if imp.name is None or imp.name == "*":
        return
    res = new.lookup(imp.target)
    if res.status in (Status.FOUND, Status.DYNAMIC):
        return
    if res.status is Status.MODULE_MISSING:  # imp.module exists: a module it leads to is missing
        yield ctx.finding(
            "RK101",
            f"module {res.missing} does not exist in {new.tree.label}{note}",
            severity=_severity(ctx, "RK101", imp),
            **common,
        )
        return
    module_loc = ctx.upstream_loc(res.container)
    cands = moved_candidates(new, imp.name, imp.module)
    if cands:
        best = cands[0]
        others = (
            f" (also defined in {', '.join(c.module for c in cands[1:4])})"
            if len(cands) > 1
            else ""
        )
        yield ctx.finding(
            "RK103",
            f"{imp.name} is no longer in {imp.module}; it is defined in {best.module}{others}{note}",
            upstream=ctx.upstream_loc(best),
            suggestion=f"from {best.module} import {imp.name}"
            + (f" as {imp.alias}" if imp.alias != imp.name else ""),
            severity=_severity(ctx, "RK103", imp),
            moved_to=best.qualname,
            **common,
        )
        return
    old_sym = ctx.old.resolve(imp.target) if ctx.old is not None else None
    if old_sym is not None:
        renamed = renamed_candidate(new, ctx.old, old_sym)
        if renamed is not None:
            yield ctx.finding(
                "RK104",
                f"{imp.name} from {imp.module} was renamed to {renamed.name} "
                f"(same body shape, defined at {renamed.relpath}:{renamed.lineno}){note}",
                upstream=ctx.upstream_loc(renamed),
                suggestion=f"from {imp.module} import {renamed.name} as {imp.alias}",
                severity=_severity(ctx, "RK104", imp),
                renamed_to=renamed.qualname,
                **common,
            )
            return
        yield ctx.finding(
            "RK105",
            f"{imp.name} was deleted from {imp.module} (it was defined at "
            f"{old_sym.relpath}:{old_sym.lineno} in {ctx.old.tree.label}){note}",
            upstream=module_loc,
            suggestion="port the code that used it; upstream has no replacement",
            severity=_severity(ctx, "RK105", imp),
            **common,
        )
        return
    yield ctx.finding(
        "RK102",
        f"{imp.module} has no name {imp.name} in {new.tree.label}{note}",
        upstream=module_loc,
        severity=_severity(ctx, "RK102", imp),
        **common,
    )
