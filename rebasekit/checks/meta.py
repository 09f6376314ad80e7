"""RK0xx: problems with the plugin input itself."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding
from rebasekit.records import PatchTargetUnresolved, PluginSyntaxError


@register_check(codes=["RK001"])
def syntax_errors(ctx: ScanContext) -> Iterator[Finding]:
    for file in ctx.corpus.files:
        if file.syntax_error:
            yield ctx.report(
                PluginSyntaxError(file.relpath, str(file.syntax_error)),
                plugin=ctx.plugin_loc(file.relpath, file.error_line, file.modname),
                suggestion="fix the syntax error; the rest of the plugin was scanned",
            )


@register_check(codes=["RK002"])
def unresolved_targets(ctx: ScanContext) -> Iterator[Finding]:
    for patch in ctx.corpus.patches:
        if patch.target is None:
            yield ctx.report(
                PatchTargetUnresolved(patch.target_expr, patch.name),
                plugin=ctx.plugin_loc(patch.relpath, patch.lineno, patch.name),
                suggestion=f"import the target from {ctx.config.upstream_package} and write it as "
                f"{patch.base}[ImportedName]",
            )
