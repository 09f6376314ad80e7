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
from rebasekit.analysis.shapes import self_assignments
from rebasekit.astutil import FuncNode, walk
from rebasekit.index import CodeIndex, Symbol


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
