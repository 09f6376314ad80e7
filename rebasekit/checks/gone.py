"""RK311: plugin calls of upstream functions and classes that are gone at NEW.

The import of a deleted name is reported where it is written (RK1xx); the code that
calls it is what has to be rewritten, often far from the import, so each call site in a
function is reported too, with where the callee was defined at the base.
"""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.checks.registry import register_check
from rebasekit.checks.suggest import moved_candidates
from rebasekit.context import ScanContext
from rebasekit.corpus.version_gates import runs_at
from rebasekit.findings import Finding
from rebasekit.index import Status
from rebasekit.records import CalledTargetGone


@register_check(codes=["RK311"], needs=["base"], pairwise=True)
def check_calls_of_removed(ctx: ScanContext) -> Iterator[Finding]:
    base = ctx.base
    if base is None:
        return
    seen: set[tuple[str, str, str]] = set()
    for c in ctx.corpus.calls:
        if c.in_function is None or c.via_orig is not None:
            continue  # module-level calls sit beside the import; aliases are RK220's
        if not runs_at(c.version_gate, ctx.new.tree.version):
            continue
        key = (c.relpath, c.in_function, c.callee)
        if key in seen:
            continue
        was = base.resolve(c.callee)
        if was is None or was.kind not in ("function", "class"):
            continue
        res = ctx.new.lookup(c.callee)
        if res.status not in (Status.MISSING, Status.MODULE_MISSING):
            continue
        seen.add(key)
        module_gone = ctx.new.module(was.module) is None
        moved = [m for m in moved_candidates(ctx.new, was.name, was.module) if m.kind == was.kind]
        record = CalledTargetGone(
            c.callee,
            c.in_function,
            was=was.qualname,
            kind=was.kind,
            defined_at=f"{was.relpath}:{was.lineno}",
            base_version=base.tree.version or base.tree.label,
            new_version=ctx.new.tree.version or ctx.new.tree.label,
            module_gone=module_gone,
            moved_to=moved[0].qualname if moved else None,
        )
        yield ctx.report(
            record,
            plugin=ctx.plugin_loc(c.relpath, c.lineno, c.in_function),
            upstream=ctx.upstream_loc(moved[0] if moved else res.container),
            suggestion=(
                f"import it from {moved[0].module} and check the call against its signature there"
                if moved
                else "find what upstream calls instead at "
                + (ctx.new.tree.version or "NEW")
                + " and port this call"
            ),
        )
