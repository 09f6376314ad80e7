"""Attributes a replaced upstream method newly assigns that the rest of its class reads.

A patch that replaces a method outright (without calling the original) takes over all
of the original's duties. When upstream's NEW version of that method starts assigning
``self.X`` and other upstream methods of the class read ``self.X``, the replacement has
to assign it too, or those methods fail with ``AttributeError``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rebasekit.analysis.defnodes import def_node, mro_methods
from rebasekit.analysis.overrides import symbol_definition
from rebasekit.analysis.shapes import self_assignments
from rebasekit.astutil import FuncNode, walk
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.cache import content_memo


@dataclass(frozen=True)
class NewDuty:
    """``attr`` is assigned by the NEW method (not by the OLD one) and read by ``reader``."""

    attr: str
    assigned_line: int  # line in the upstream file, at NEW
    reader: str  # ``Class.method`` at NEW that reads it
    reader_line: int


def _reads(func: FuncNode) -> dict[str, int]:
    me = func.args.args[0].arg if func.args.args else "self"
    out: dict[str, int] = {}
    for node in walk(func):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == me
            and isinstance(node.ctx, ast.Load)
        ):
            out.setdefault(node.attr, node.lineno)
    return out


def cached_new_duties(
    index: CodeIndex, cls: Symbol, method: str, old_sym: Symbol, new_sym: Symbol
) -> list[NewDuty]:
    """:func:`new_duties` of ``old_sym``'s body (none unless it is a function), kept in
    the index's cache under every text it reads: the two bodies and each class of the
    MRO with its name and first line (the readers' lines count from it).

    It walks every method of the target's MRO, whole upstream classes of thousands of
    lines, parsed for it alone on a warm scan.
    """
    mro = index.mro(cls)
    parts = (
        method,
        (old_sym.name, old_sym.source),
        (new_sym.kind, new_sym.name, new_sym.lineno, new_sym.source),
        tuple((k.kind, k.name, k.lineno, k.source) for k in mro),
    )

    def compute() -> list[NewDuty]:
        old_def = symbol_definition(old_sym)
        old_node = old_def.node if old_def is not None else None
        if not isinstance(old_node, FuncNode):
            return []
        return new_duties(index, cls, method, old_node, new_sym)

    return content_memo(index.cache.derived(), "new_duties", parts, compute, list[NewDuty])


def new_duties(
    index: CodeIndex, cls: Symbol, method: str, old_node: FuncNode, new_sym: Symbol
) -> list[NewDuty]:
    """Duties the NEW ``method`` took on, each with one upstream reader in ``cls``'s MRO."""
    new_node = def_node(new_sym)
    if not isinstance(new_node, FuncNode):
        return []
    before = set(self_assignments(old_node))
    added = {
        name: values[0].line
        for name, values in self_assignments(new_node).items()
        if name not in before
    }
    if not added:
        return []
    out: list[NewDuty] = []
    for klass, func in mro_methods(index, cls):
        if func.name == method:
            continue
        for name, line in _reads(func).items():
            if name in added and all(d.attr != name for d in out):
                out.append(
                    NewDuty(
                        name,
                        (new_sym.lineno or 1) + added[name] - 1,
                        f"{klass.name}.{func.name}",
                        (klass.lineno or 1) + line - 1,
                    )
                )
    return sorted(out, key=lambda d: d.attr)
