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
from rebasekit.corpus.version_gates import runs_at
from rebasekit.findings import Finding, Severity
from rebasekit.index import Status
from rebasekit.records import (
    ImportModuleMissing,
    ImportSymbolDeleted,
    ImportSymbolMissing,
    ImportSymbolMoved,
    ImportSymbolRenamed,
)


def _severity(ctx: ScanContext, code: str, imp: PluginImport) -> Severity | None:
    if imp.guard == "try":
        return Severity.INFO  # the plugin already handles the ImportError
    return Severity.WARNING if imp.guard == "type_checking" else None


@register_check(codes=["RK101", "RK102", "RK103", "RK104", "RK105"])
def check_imports(ctx: ScanContext) -> Iterator[Finding]:
    for imp in ctx.corpus.imports:
        yield from _check_one(ctx, imp)


def _module_patch_names(ctx: ScanContext, module: str) -> set[str]:
    """Names the plugin's patches on ``module`` add to it (``_SP = None`` in the patch)."""
    return {a.name for p in ctx.corpus.patches if p.target == module for a in p.attributes}


def _check_one(ctx: ScanContext, imp: PluginImport) -> Iterator[Finding]:
    new = ctx.new
    if not runs_at(imp.version_gate, new.tree.version):
        return  # a branch for other vLLM releases (``if vllm_version_is(...)``)
    loc = ctx.plugin_loc(imp.relpath, imp.lineno, imp.in_function)
    common = dict(target=imp.target, module=imp.module, guard=imp.guard)
    if new.module(imp.module) is None:
        suggestion = None
        if imp.name and imp.name != "*":
            cands = moved_candidates(new, imp.name, imp.module)
            if cands:
                suggestion = f"from {cands[0].module} import {imp.name}"
        yield ctx.report(
            ImportModuleMissing(**common, tree=new.tree.label, missing=imp.module),
            plugin=loc,
            suggestion=suggestion,
            severity=_severity(ctx, "RK101", imp),
        )
        return
    if imp.name is None or imp.name == "*":
        return
    res = new.lookup(imp.target)
    if res.status in (Status.FOUND, Status.DYNAMIC):
        return
    if imp.name in _module_patch_names(ctx, imp.module):
        return  # the plugin's own module patch puts the name there (patches apply at load)
    if res.status is Status.MODULE_MISSING:
        yield ctx.report(
            ImportModuleMissing(**common, tree=new.tree.label, missing=res.missing),
            plugin=loc,
            severity=_severity(ctx, "RK101", imp),
        )
        return
    module_loc = ctx.upstream_loc(res.container)
    cands = moved_candidates(new, imp.name, imp.module)
    if cands:
        best = cands[0]
        yield ctx.report(
            ImportSymbolMoved(
                **common,
                name=imp.name,
                moved_to=best.qualname,
                new_module=best.module,
                also_in=tuple(c.module for c in cands[1:4]),
            ),
            plugin=loc,
            upstream=ctx.upstream_loc(best),
            suggestion=f"from {best.module} import {imp.name}"
            + (f" as {imp.alias}" if imp.alias != imp.name else ""),
            severity=_severity(ctx, "RK103", imp),
        )
        return
    old_sym = ctx.old.resolve(imp.target) if ctx.old is not None else None
    if old_sym is not None:
        renamed = renamed_candidate(new, ctx.old, old_sym)
        if renamed is not None:
            yield ctx.report(
                ImportSymbolRenamed(
                    **common,
                    name=imp.name,
                    renamed_to=renamed.qualname,
                    new_name=renamed.name,
                    defined_at=f"{renamed.relpath}:{renamed.lineno}",
                ),
                plugin=loc,
                upstream=ctx.upstream_loc(renamed),
                suggestion=f"from {imp.module} import {renamed.name} as {imp.alias}",
                severity=_severity(ctx, "RK104", imp),
            )
            return
        yield ctx.report(
            ImportSymbolDeleted(
                **common,
                name=imp.name,
                defined_at=f"{old_sym.relpath}:{old_sym.lineno}",
                old_tree=ctx.old.tree.label,
            ),
            plugin=loc,
            upstream=module_loc,
            suggestion="port the code that used it; upstream has no replacement",
            severity=_severity(ctx, "RK105", imp),
        )
        return
    yield ctx.report(
        ImportSymbolMissing(**common, name=imp.name, tree=new.tree.label),
        plugin=loc,
        upstream=module_loc,
        severity=_severity(ctx, "RK102", imp),
    )
