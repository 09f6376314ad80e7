"""RK405: plugin subclass methods that copy the upstream method they override.

RK402 covers patches; a plain subclass that overrides a method by pasting upstream's
body (instead of calling ``super()``) keeps the old behaviour just the same. A method
counts as a copy when it makes no ``super()`` (or ``Base.m(self, ...)``) call to the
method and its body shares at least :data:`COPY_THRESHOLD` of its lines with the OLD
upstream body (``difflib.SequenceMatcher`` ratio over stripped, non-comment lines, as
:func:`rebasekit.analysis.bodies.similarity` measures it). Only with a base tree.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rebasekit.analysis.bodies import changed_lines, similarity, unified
from rebasekit.analysis.overrides import plugin_definitions, symbol_definition
from rebasekit.analysis.pluginclasses import PluginClass, plugin_classes, upstream_class
from rebasekit.astutil import dotted, walk
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding
from rebasekit.records import CopiedSubclassBodyDrift

COPY_THRESHOLD = 0.6


def _delegates(func: ast.FunctionDef | ast.AsyncFunctionDef, pc: PluginClass) -> bool:
    """Whether ``func`` calls the method it overrides through super() or the base."""
    base = pc.upstream.rsplit(".", 1)[-1]
    for node in walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            recv = node.func.value
            if node.func.attr != func.name:
                continue
            if isinstance(recv, ast.Call) and dotted(recv.func) == "super":
                return True
            if (dotted(recv) or "").rsplit(".", 1)[-1] == base:
                return True
    return False


@register_check(codes=["RK405"], needs=["base"], pairwise=True)
def check_copied_subclass_bodies(ctx: ScanContext) -> Iterator[Finding]:
    base = ctx.base
    if base is None:
        return
    for pc in plugin_classes(ctx.corpus):
        if pc.patch is not None:
            continue  # RK402
        old_cls, new_cls = upstream_class(base, pc), upstream_class(ctx.new, pc)
        if old_cls is None or new_cls is None:
            continue
        defs = plugin_definitions(ctx.corpus, pc.relpath)
        for func in pc.methods():
            if _delegates(func, pc):
                continue
            old_sym, new_sym = (
                base.lookup_member(old_cls, func.name),
                ctx.new.lookup_member(new_cls, func.name),
            )
            if (
                old_sym is None
                or new_sym is None
                or old_sym.kind != "function"
                or new_sym.kind != "function"
            ):
                continue
            ours = next((d for d in defs.values() if d.node is func), None)
            old_def, new_def = symbol_definition(old_sym), symbol_definition(new_sym)
            if ours is None or old_def is None or new_def is None:
                continue
            if old_def.fingerprint == new_def.fingerprint:
                continue
            ratio = similarity(ours, old_def)
            if ratio < COPY_THRESHOLD:
                continue
            removed, added = changed_lines(old_def.source, new_def.source)
            record = CopiedSubclassBodyDrift(
                new_sym.qualname,
                pc.name,
                method=func.name,
                base_version=base.tree.version,
                new_version=ctx.new.tree.version,
                similarity=round(ratio, 2),
                removed=removed,
                added=added,
                diff=unified(
                    old_def.source,
                    new_def.source,
                    f"{old_sym.relpath}@{base.tree.version}",
                    f"{new_sym.relpath}@{ctx.new.tree.version}",
                ),
            )
            yield ctx.report(
                record,
                plugin=ctx.plugin_loc(pc.relpath, func.lineno, f"{pc.name}.{func.name}"),
                upstream=ctx.upstream_loc(new_sym),
                suggestion="merge the upstream change (diff in the JSON details) into the copy, "
                "or call super() instead of copying",
            )
