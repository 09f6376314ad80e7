"""RK315: a patch reaches into ``self.X`` that upstream now wraps in another object."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit.analysis.attrs import provision
from rebasekit.analysis.configdefaults import resolve_class_in
from rebasekit.analysis.wrapped import new_wraps, stores_into, unwrapper
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Location
from rebasekit.index import CodeIndex, Symbol
from rebasekit.records import AttributeWrapped


def _misses(index: CodeIndex, cls: Symbol, wrapper: str, accessors: tuple[str, ...]) -> list[str]:
    """Accessors a read through the wrapper would not find (it has no ``__getattr__``)."""
    qual = resolve_class_in(index, cls.module, wrapper)
    sym = index.resolve(qual) if qual else None
    if sym is None or index.lookup_member(sym, "__getattr__") is not None:
        return []  # unknown, or it hands reads on to the wrapped object
    return [a for a in accessors if not a.startswith("__") and index.lookup_member(sym, a) is None]


@register_check(codes=["RK315"], needs=["base"])
def check_wrapped_attributes(ctx: ScanContext) -> Iterator[Finding]:
    old = ctx.base
    if old is None or old is ctx.new:
        return
    for patch in ctx.corpus.patches:
        node = ctx.corpus.class_node(patch)
        if not patch.target or node is None:
            continue
        cls, old_cls = ctx.new.resolve(patch.target), old.resolve(patch.target)
        if cls is None or old_cls is None or cls.kind != "class" or old_cls.kind != "class":
            continue
        stores = stores_into(node)
        reads = {(r.attr, r.method): r for r in patch.self_reads if r.accessors}
        for attr in sorted({a for a, _ in stores} | {a for a, _ in reads}):
            old_p = provision(old, old_cls, attr)
            if not old_p.assignments:
                continue
            wraps = new_wraps(old_p, provision(ctx.new, cls, attr), attr)
            if not wraps:
                continue
            wrapper, where, line, source = wraps[0]
            unwrap = unwrapper(ctx.new, cls, attr, wrapper)
            methods = {m for a, m in stores if a == attr} | {m for a, m in reads if a == attr}
            for method in sorted(methods):
                read = reads.get((attr, method))
                stored = (attr, method) in stores
                missed = _misses(ctx.new, cls, wrapper, read.accessors) if read else []
                if not stored and not missed:
                    continue  # reads the wrapper hands on to the object it wraps
                lines = [read.lineno] if read else []
                if stored:
                    lines.append(stores[(attr, method)])
                record = AttributeWrapped(
                    target=patch.target,
                    attribute=attr,
                    method=method,
                    patch=patch.name,
                    cls=cls.name,
                    accessors=tuple(read.accessors) if read else (),
                    sets=stored,
                    wrapper=wrapper,
                    wrap_value=source,
                    wrap_where=where,
                    unwrapped_by=unwrap.qualname if unwrap is not None else None,
                    old_version=old.tree.version,
                    new_version=ctx.new.tree.version,
                )
                yield ctx.report(
                    record,
                    plugin=ctx.plugin_loc(patch.relpath, min(lines), f"{patch.name}.{method}"),
                    upstream=(
                        ctx.upstream_loc(unwrap)
                        if unwrap is not None
                        else Location(cls.relpath, line, None, f"{cls.qualname}.{attr}")
                    ),
                    suggestion=(
                        f"reach the object through self.{unwrap.name}()"
                        if unwrap is not None
                        else f"unwrap self.{attr} before using it"
                    ),
                )
