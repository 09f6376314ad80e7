"""Shapes of values in upstream code: what a function returns, what ``__init__`` assigns.

Both questions are asked of two releases and compared, so the answers are coarse on
purpose: a tuple's arity, "a call to ``CpuGpuBuffer``", "a ``torch.zeros`` tensor".
Coarse answers that differ are real drift; fine-grained ones would differ on every
refactor.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rebasekit.astutil import dotted, own_nodes
from rebasekit.datacodec import record

# --------------------------------------------------------------------------- returns


@dataclass(frozen=True)
class ReturnShape:
    """What a function's ``return`` statements produce.

    ``arities`` holds the tuple lengths seen; ``single`` is True when some return gives
    a non-tuple value (or nothing); ``opaque`` when some return passes on a value whose
    shape is unknown (a call result, a name), so no arity claim can be made.
    """

    arities: frozenset[int]
    single: bool
    opaque: bool

    def render(self) -> str:
        parts = [f"a {n}-tuple" for n in sorted(self.arities)]
        if self.single:
            parts.append("a single value")
        if self.opaque:
            parts.append("values of unknown shape")
        return " or ".join(parts) or "nothing"

    def unpacks_to(self, n: int) -> bool | None:
        """Whether ``a1, ..., an = f()`` works: True, False, or None when undecidable.

        True as soon as one ``return`` gives an n-tuple; False only when every return
        is understood and none does.
        """
        if n in self.arities:
            return True
        if self.opaque:
            return None
        if self.arities or self.single:
            return False
        return None


def return_shape(func: ast.FunctionDef | ast.AsyncFunctionDef) -> ReturnShape:
    """Collect the shape of every ``return`` in ``func`` (generators count as opaque)."""
    arities: set[int] = set()
    single = opaque = False
    saw_return = returns_none = False
    for node in own_nodes(func):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            opaque = True
        if not isinstance(node, ast.Return):
            continue
        saw_return = True
        value = node.value
        if isinstance(value, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in value.elts):
            arities.add(len(value.elts))
        elif value is None or isinstance(
            value,
            (
                ast.Constant,
                ast.BinOp,
                ast.Compare,
                ast.BoolOp,
                ast.Dict,
                ast.Set,
                ast.JoinedStr,
                ast.UnaryOp,
            ),
        ):
            if isinstance(value, ast.Constant) and value.value is None:
                returns_none = True  # decided after the walk: next to tuples it is Optional[tuple]
                continue
            single = True
        elif (
            isinstance(value, ast.Call)
            and (dotted(value.func) or "_").rsplit(".", 1)[-1][:1].isupper()
        ):
            single = True  # ``return SomeOutput(...)``: a constructed object, not a tuple
        else:
            opaque = True
    if not saw_return or (returns_none and not arities):
        single = True
    return ReturnShape(frozenset(arities), single, opaque)


def unpack_targets(node: ast.Assign | ast.For) -> int | None:
    """Arity of the unpacking target (``a, b = ...`` → 2); None for plain or starred targets."""
    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
    if isinstance(target, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in target.elts):
            return None
        return len(target.elts)
    return None


# --------------------------------------------------------------------- instance attrs


@record
@dataclass(frozen=True)
class AttrValue:
    """A coarse description of the value assigned to ``self.X``.

    ``kind`` is one of ``call`` (``detail`` = the callee's dotted name), ``literal``
    (``detail`` = the literal's type), ``none``, ``param`` (copied from an argument),
    ``attr`` (read from another object) or ``expr``.
    """

    kind: str
    detail: str
    line: int
    source: str

    def render(self) -> str:
        if self.kind == "call":
            return f"a {self.detail}(...) value"
        if self.kind == "literal":
            return f"a {self.detail} literal"
        if self.kind == "none":
            return "None"
        return self.source


def describe_value(value: ast.AST, params: set[str]) -> AttrValue:
    """Classify one assigned expression (see :class:`AttrValue`)."""
    src = ast.unparse(value)
    line = getattr(value, "lineno", 0)
    if isinstance(value, ast.Call):
        return AttrValue("call", dotted(value.func) or ast.unparse(value.func), line, src)
    if isinstance(value, ast.Constant):
        if value.value is None:
            return AttrValue("none", "None", line, src)
        return AttrValue("literal", type(value.value).__name__, line, src)
    if isinstance(
        value, (ast.List, ast.Dict, ast.Set, ast.Tuple, ast.ListComp, ast.DictComp, ast.SetComp)
    ):
        name = {"ListComp": "list", "DictComp": "dict", "SetComp": "set"}.get(
            type(value).__name__, type(value).__name__.lower()
        )
        return AttrValue("literal", name, line, src)
    if isinstance(value, ast.Name) and value.id in params:
        return AttrValue("param", value.id, line, src)
    if isinstance(value, ast.Attribute):
        return AttrValue("attr", src, line, src)
    return AttrValue("expr", src, line, src)


def self_assignments(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[AttrValue]]:
    """``self.X = value`` assignments in ``func`` (all branches), keyed by ``X``."""
    self_name = func.args.args[0].arg if func.args.args else "self"
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    out: dict[str, list[AttrValue]] = {}

    def record(target: ast.AST, value: ast.AST | None) -> None:
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == self_name
        ):
            desc = (
                describe_value(value, params)
                if value is not None
                else AttrValue("expr", "", target.lineno, "")
            )
            out.setdefault(target.attr, []).append(desc)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                record(elt, None)

    for node in own_nodes(func):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if (
                    isinstance(t, (ast.Tuple, ast.List))
                    and isinstance(node.value, ast.Tuple)
                    and len(node.value.elts) == len(t.elts)
                ):
                    for te, ve in zip(t.elts, node.value.elts):
                        record(te, ve)
                else:
                    record(t, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            record(node.target, node.value)
    for values in out.values():
        values.sort(key=lambda v: v.line)
    return out
