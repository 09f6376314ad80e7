"""What a wrapper depends on in the original it calls, and whether an upstream change touches it.

A wrapper (an override that calls the original through an ``_orig_`` alias or
``super()``) runs the original's body unchanged, so a change to that body matters to
the wrapper only where the two meet: the ``self`` attributes the wrapper reads (which
the original assigns) or sets (which the original reads or assigns too), the parameters
it names, and the result it takes apart. Anything else in the original's body the
wrapper passes through as it is.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rebasekit.analysis.shapes import return_shape, self_assignments
from rebasekit.astutil import FuncNode, children, first_param, own_nodes


@dataclass(frozen=True)
class WrapperUse:
    """What one wrapper takes from the original it calls."""

    calls_original: bool  # some call to the original was found in the wrapper's body
    uses_result: bool  # the original's result is taken apart, not only returned or dropped
    reads: frozenset[str]  # ``self.X`` the wrapper reads
    writes: frozenset[str]  # ``self.X`` the wrapper assigns
    names: frozenset[str]  # parameters the wrapper names (not through ``*args``/``**kwargs``)


def _is_original_call(node: ast.AST, aliases: set[str], attr: str) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    func = node.func
    if func.attr in aliases:
        return True
    owner = func.value
    return (
        func.attr == attr
        and isinstance(owner, ast.Call)
        and isinstance(owner.func, ast.Name)
        and owner.func.id == "super"
    )


def wrapper_use(func: FuncNode, aliases: set[str], attr: str) -> WrapperUse:
    """Read ``func`` as a wrapper of ``attr`` whose original is reached through ``aliases``."""
    me = first_param(func)
    parents: dict[ast.AST, ast.AST] = {}
    for node in own_nodes(func):
        for child in children(node):
            parents[child] = node
    reads: set[str] = set()
    writes: set[str] = set()
    names: set[str] = set()
    calls = False
    used = False
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]} - {
        me
    }
    for node in own_nodes(func):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == me and node.attr not in aliases:
                (writes if isinstance(node.ctx, ast.Store) else reads).add(node.attr)
        elif isinstance(node, ast.Name) and node.id in params:
            names.add(node.id)
        if _is_original_call(node, aliases, attr):
            calls = True
            used = used or _result_taken_apart(node, parents)
    reads -= {attr}
    return WrapperUse(calls, used, frozenset(reads), frozenset(writes), frozenset(names))


def _result_taken_apart(call: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """False when the call's value is returned as it is or dropped; True otherwise."""
    parent = parents.get(call)
    while isinstance(parent, ast.Await):
        call, parent = parent, parents.get(parent)
    return not isinstance(parent, (ast.Return, ast.Expr))


def _self_reads(func: FuncNode) -> set[str]:
    me = first_param(func)
    return {
        n.attr
        for n in own_nodes(func)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == me
        and isinstance(n.ctx, ast.Load)
    }


def _assigned(func: FuncNode) -> dict[str, tuple[tuple[str, str], ...]]:
    return {
        name: tuple((v.kind, v.detail) for v in values)
        for name, values in self_assignments(func).items()
    }


def _param_shapes(func: FuncNode) -> dict[str, str]:
    a = func.args
    out: dict[str, str] = {}
    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for arg, default in zip(positional, defaults):
        out[arg.arg] = "" if default is None else ast.unparse(default)
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        out[arg.arg] = "" if default is None else ast.unparse(default)
    return out


def touched(use: WrapperUse, old: FuncNode, new: FuncNode) -> tuple[str, ...]:
    """The parts of the original's change that meet the wrapper, each as a short phrase.

    Empty when the change stays inside what the wrapper passes through.
    """
    out: list[str] = []
    old_set, new_set = _assigned(old), _assigned(new)
    for name in sorted(use.reads):
        if old_set.get(name) != new_set.get(name):
            out.append(f"assigns self.{name} (which the wrapper reads) differently")
    old_reads, new_reads = _self_reads(old), _self_reads(new)
    for name in sorted(use.writes):
        if (name in old_reads) != (name in new_reads) or (name in old_set) != (name in new_set):
            out.append(f"uses self.{name} (which the wrapper sets) differently")
    old_params, new_params = _param_shapes(old), _param_shapes(new)
    for name in sorted(use.names):
        if old_params.get(name) != new_params.get(name):
            out.append(f"changed parameter {name!r} (which the wrapper names)")
    if use.uses_result and return_shape(old) != return_shape(new):
        was, now = return_shape(old).render(), return_shape(new).render()
        out.append(f"returns {now} instead of {was} (the wrapper takes the result apart)")
    return tuple(out)
