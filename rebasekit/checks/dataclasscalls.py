"""RK306: constructor calls to upstream dataclasses, bound against their declared fields.

RK301 skips classes whose ``__init__`` is generated; this check generates it the way
``@dataclass`` does (:mod:`rebasekit.analysis.dataclassfields`) and reports keywords that
are no longer fields and new required fields the call does not pass.
"""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.binding import CallShape, bind, render_params
from rebasekit.analysis.dataclassfields import dataclass_params, is_dataclass
from rebasekit.analysis.pluginclasses import replaced_names
from rebasekit.analysis.upstreamuses import uses_of
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.models import Param
from rebasekit.records import DataclassFieldGone


def _fields(index: CodeIndex | None, callee: str) -> tuple[Symbol, list[Param]] | None:
    if index is None:
        return None
    sym = index.resolve(callee)
    if sym is None or sym.kind != "class" or not is_dataclass(sym):
        return None
    params = dataclass_params(index, sym)
    return (sym, params) if params is not None else None


def _upstream_call(index: CodeIndex, cls: Symbol, params: list[Param]) -> str | None:
    for use in uses_of(index, cls, cls.name, self_only=False):
        if use.receiver is None and use.shape.keywords and bind(use.shape, params).ok:
            return use.render()
    return None


@register_check(codes=["RK306"])
def check_dataclass_calls(ctx: ScanContext) -> Iterator[Finding]:
    replaced = replaced_names(ctx.corpus)
    for c in ctx.corpus.calls:
        if c.via_orig or c.callee in replaced:
            continue
        found = _fields(ctx.new, c.callee)
        if found is None:
            continue
        sym, params = found
        if sym.qualname in replaced:
            continue  # the plugin installs its own class under that name
        shape = CallShape(c.positional, tuple(c.keywords), c.star_args, c.star_kwargs)
        result = bind(shape, params)
        if not (result.unexpected or result.missing):
            continue
        old = _fields(ctx.old, c.callee)
        sig = render_params(params)
        old_sig = render_params(old[1]) if old is not None else None
        record = DataclassFieldGone(
            sym.qualname,
            tuple(result.unexpected),
            tuple(result.missing),
            tree=ctx.new.tree.version or ctx.new.tree.label,
            new_fields=sig,
            old_tree=(ctx.old.tree.version or ctx.old.tree.label)
            if ctx.old is not None and old_sig and old_sig != sig
            else None,
            old_fields=old_sig if old_sig != sig else None,
            upstream_call=_upstream_call(ctx.new, sym, params),
        )
        fixes = []
        if result.unexpected:
            fixes.append("drop " + ", ".join(result.unexpected))
        if result.missing:
            fixes.append("pass " + ", ".join(result.missing))
        yield ctx.report(
            record,
            plugin=ctx.plugin_loc(c.relpath, c.lineno, c.in_function),
            upstream=ctx.upstream_loc(sym),
            suggestion=" and ".join(fixes) + f" to match the fields {sig}",
        )
