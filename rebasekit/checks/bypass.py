"""RK401: a second implementation of a patched class that a switch can route around the patch."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.parallel import find_twins
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Location
from rebasekit.records import ParallelImplementation


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


@register_check(codes=["RK401"])
def check_parallel_implementations(ctx: ScanContext) -> Iterator[Finding]:
    # One finding per patch, not per class: each patch's own members are what the twin
    # routes around, and each can be suppressed (or fixed) on its own.
    seen: set[tuple[str, str]] = set()
    for patch in ctx.corpus.patches:
        if not patch.target or (patch.target, patch.name) in seen:
            continue
        seen.add((patch.target, patch.name))
        target = ctx.new.resolve(patch.target)
        if target is None or target.kind != "class":
            continue
        # Dunders (``__init__`` above all) are on every class: sharing one says nothing about
        # being the same concept, so only ordinary members count as evidence of a twin.
        patched = {a.name for a in patch.attributes if not _is_dunder(a.name)}
        for twin in find_twins(ctx.new, target.qualname):
            twin_sym = ctx.new.resolve(twin.qualname)
            shared = sorted(patched & set(twin_sym.members if twin_sym is not None else {}))
            if not twin.selectors and not shared:
                continue  # a same-named class with none of the patched members: another concept
            record = ParallelImplementation(
                patch.target,
                twin.qualname,
                patched=target.qualname,
                patch=patch.name,
                twin_path=twin.relpath,
                overridden=tuple(a.name for a in patch.attributes),
                shared_members=tuple(shared),
                switches=tuple(s.render() for s in twin.selectors),
                selectors=tuple(
                    {
                        "path": s.relpath,
                        "line": s.line,
                        "condition": s.condition,
                        "branch": s.branch,
                        "env_vars": s.env_vars,
                        "constants": s.constants,
                        "resolved_at": s.resolved_at,
                    }
                    for s in twin.selectors
                ),
            )
            yield ctx.report(
                record,
                plugin=ctx.plugin_loc(patch.relpath, patch.lineno, patch.name),
                upstream=Location(twin.relpath, twin.line, None, twin.qualname),
                suggestion=f"patch {twin.qualname} as well, or refuse/force the selecting switch "
                f"(e.g. set its env var) while the plugin is active",
            )
