"""How an override hands its arguments on to the method it replaces.

``self._orig_forward(x, mask)`` or ``super().forward(x, mask)`` forwards the override's
own parameters by position. When upstream drops ``mask`` and adds another parameter
after it, the call still binds, yet the value lands in the wrong parameter; no binding
check can see that. This module lists, per delegating call, which of the override's
parameters it forwards at which position.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rebasekit.analysis.pluginclasses import (
    PluginClass,
    expand,
    import_map,
    method_nodes,
    self_name,
)
from rebasekit.astutil import dotted
from rebasekit.corpus.extract import ORIG_PREFIX
from rebasekit.corpus.models import PluginCorpus


@dataclass(frozen=True)
class Forward:
    """One delegating call in ``method``: which upstream attribute, which names where."""

    owner: PluginClass
    method: str
    line: int
    upstream_attr: str  # the upstream member the call reaches
    callee: str  # as written (``self._orig_forward``, ``super().forward``)
    forwarded: tuple[tuple[int, str], ...]  # (0-based position after self, parameter name)


def forwards(corpus: PluginCorpus, pc: PluginClass, version: str | None = None) -> list[Forward]:
    aliases = {a.alias: a.attr for a in pc.patch.orig_aliases} if pc.patch else {}
    names = import_map(corpus, pc.relpath)
    out: list[Forward] = []
    for func in pc.methods():
        me = self_name(func)
        own = {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}
        for node in method_nodes(func, version):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            recv, attr = node.func.value, node.func.attr
            args = list(node.args)
            target: str | None = None
            if attr.startswith(ORIG_PREFIX) and attr in aliases:
                target = aliases[attr]
                bound = isinstance(recv, ast.Name) and recv.id == me
                if not bound and args and isinstance(args[0], ast.Name) and args[0].id == me:
                    args = args[1:]  # ``Patch._orig_x(self, ...)``
                elif not bound:
                    continue
            elif isinstance(recv, ast.Call) and dotted(recv.func) == "super":
                target = attr
            elif (
                pc.patch is None
                and expand(names, dotted(recv)) == pc.upstream
                and args
                and isinstance(args[0], ast.Name)
                and args[0].id == me
            ):
                target, args = attr, args[1:]
            if target is None:
                continue
            forwarded: list[tuple[int, str]] = []
            for i, arg in enumerate(args):
                if isinstance(arg, ast.Starred):
                    break  # positions after a starred argument are unknown
                if isinstance(arg, ast.Name) and arg.id in own and arg.id != me:
                    forwarded.append((i, arg.id))
            if forwarded:
                out.append(
                    Forward(
                        pc, func.name, node.lineno, target, ast.unparse(node.func), tuple(forwarded)
                    )
                )
    return out
