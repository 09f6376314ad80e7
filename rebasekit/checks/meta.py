"""RK0xx: problems with the plugin input itself."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding


@register_check(codes=["RK001"])
def syntax_errors(ctx: ScanContext) -> Iterator[Finding]:
    for file in ctx.corpus.files:
        if file.syntax_error:
            yield ctx.finding(
                "RK001",
                f"{file.relpath} does not parse: {file.syntax_error}; the file was skipped",
                plugin=ctx.plugin_loc(file.relpath, file.error_line, file.modname),
                subject=file.relpath,
                suggestion="fix the syntax error; the rest of the plugin was scanned",
            )


@register_check(codes=["RK002"])
def unresolved_targets(ctx: ScanContext) -> Iterator[Finding]:
    for patch in ctx.corpus.patches:
        if patch.target is None:
            yield ctx.finding(
                "RK002",
                f"target '{patch.target_expr}' of {patch.name} is not an imported upstream name",
                plugin=ctx.plugin_loc(patch.relpath, patch.lineno, patch.name),
                subject=patch.target_expr,
                suggestion=f"import the target from {ctx.config.upstream_package} and write it as "
                f"{patch.base}[ImportedName]",
            )
