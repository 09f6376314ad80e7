"""Calls a plugin class makes on ``self`` and through ``super()`` into its upstream class.

``self.prepare_inputs(batch)`` inside a patch or a subclass names no import, so the
corpus's call list never has it; yet it binds against upstream's method at every pin.
This module finds those calls and resolves each against one tree:

* ``self.m(...)``: ``m`` looked up along the upstream class's MRO, unless the plugin
  class (or another patch of the same class) defines or assigns ``m`` itself;
* ``super().m(...)`` / ``super(Mine, self).m(...)`` / ``Base.m(self, ...)`` in a plain
  subclass: ``m`` looked up from the upstream base.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass

from rebasekit.analysis.binding import BindResult, CallShape, bind, drop_bound, shape_of_call
from rebasekit.analysis.dataclassfields import dataclass_params
from rebasekit.analysis.defnodes import call_params
from rebasekit.analysis.pluginclasses import (
    PluginClass,
    expand,
    import_map,
    method_nodes,
    patched_names,
    self_name,
    upstream_class,
)
from rebasekit.analysis.shapes import dotted
from rebasekit.corpus.models import PluginCorpus
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.models import Param


@dataclass(frozen=True)
class ClassCall:
    """One call on ``self`` or through ``super()`` inside a plugin class method."""

    owner: PluginClass
    method: str  # the plugin method making the call
    name: str  # the upstream method called
    line: int
    shape: CallShape
    via: str  # "self" | "super"
    text: str
    # ``super(X, self)`` naming an upstream class X: lookup starts after X in its MRO
    start_after: str | None = None

    @property
    def where(self) -> str:
        return f"{self.owner.name}.{self.method}"


def _is_super(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and dotted(node.func) == "super"


def class_calls(
    corpus: PluginCorpus, pc: PluginClass, version: str | None = None
) -> list[ClassCall]:
    """``self.m(...)`` calls (both kinds of class) and super() calls (plain subclasses)."""
    names = import_map(corpus, pc.relpath)
    out: list[ClassCall] = []
    for func in pc.methods():
        me = self_name(func)
        for node in method_nodes(func, version):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            recv, attr = node.func.value, node.func.attr
            via = None
            start_after = None
            shape = shape_of_call(node)
            if me is not None and isinstance(recv, ast.Name) and recv.id == me:
                via = "self"
            elif pc.patch is None and _is_super(recv):
                via = "super"
                sup_args = recv.args  # type: ignore[attr-defined]
                if sup_args:
                    first = dotted(sup_args[0])
                    if first != pc.name:
                        start_after = expand(names, first)
                        if start_after is None:
                            continue  # super() of a class the scan cannot place
            elif (
                pc.patch is None
                and expand(names, dotted(recv)) == pc.upstream
                and me is not None
                and node.args
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id == me
            ):
                via = "super"  # ``Base.m(self, ...)``: an explicit unbound call
                shape = CallShape(
                    shape.positional - 1, shape.keywords, shape.star_args, shape.star_kwargs
                )
            if via is None or attr.startswith("_orig_"):
                continue
            out.append(
                ClassCall(
                    pc,
                    func.name,
                    attr,
                    node.lineno,
                    shape,
                    via,
                    ast.unparse(node.func),
                    start_after,
                )
            )
    return out


@dataclass(frozen=True)
class Callee:
    """What a class call reaches at one tree: the method and the parameters it binds."""

    sym: Symbol
    params: list[Param]


def resolve_call(
    corpus: PluginCorpus, index: CodeIndex, call: ClassCall
) -> tuple[str, Callee | None]:
    """("found", callee) / ("missing", None) / ("unknown", None) for ``call`` at ``index``.

    "missing" is said only when the class and its whole MRO are in the tree and nothing
    the plugin adds supplies the name; anything dynamic is "unknown".
    """
    cls = upstream_class(index, call.owner)
    if cls is not None and call.start_after is not None:
        named = index.resolve(call.start_after)
        mro = index.mro(named) if named is not None and named.kind == "class" else []
        cls = mro[1] if len(mro) > 1 else None
    if cls is None:
        return "unknown", None
    if call.via == "self" and (
        call.name in call.owner.own_names or call.name in patched_names(corpus, index, cls)
    ):
        return "unknown", None
    if call.via == "super" and call.name == "__init__":
        init = init_callee(index, cls)
        return ("found", init) if init is not None else ("unknown", None)
    member = index.lookup_member(cls, call.name)
    if member is None:
        if any(k.external_bases for k in index.mro(cls)) or _has_getattr(index, cls):
            return "unknown", None
        if call.name in _instance_attrs(index, cls):
            return "unknown", None
        return "missing", None
    if member.kind == "class":
        return "unknown", None  # a nested class called through self: a constructor
    if member.kind != "function" or member.is_property:
        return "unknown", None  # an attribute holding a callable: its parameters are unknown
    found = call_params(index, member, bound=True)
    if found is None:
        return "unknown", None
    return "found", Callee(member, found[0])


def init_callee(index: CodeIndex, cls: Symbol) -> Callee | None:
    """``cls.__init__`` as a bound call: the written one, or the dataclass-generated one."""
    member = index.lookup_member(cls, "__init__")
    if member is not None and member.signature is not None:
        return Callee(member, drop_bound(list(member.signature.params)))
    params = dataclass_params(index, cls)
    return Callee(cls, params) if params is not None else None


def _has_getattr(index: CodeIndex, cls: Symbol) -> bool:
    return any(n in k.members for k in index.mro(cls) for n in ("__getattr__", "__getattribute__"))


def _instance_attrs(index: CodeIndex, cls: Symbol) -> set[str]:
    out: set[str] = set()
    for klass in index.mro(cls):
        if klass.fact is not None:
            out |= set(klass.fact.instance_attrs)
    return out


def check(call: ClassCall, callee: Callee) -> BindResult:
    return bind(call.shape, callee.params)


def renamed_to(old: CodeIndex, new: CodeIndex, cls_name: str, name: str) -> str | None:
    """The NEW member that looks like OLD's ``name``: same body shape, else the closest name."""
    old_cls, new_cls = old.resolve(cls_name), new.resolve(cls_name)
    if old_cls is None or new_cls is None or old_cls.kind != "class" or new_cls.kind != "class":
        return None
    old_sym = old.lookup_member(old_cls, name)
    members: dict[str, Symbol] = {}
    for klass in new.mro(new_cls):
        for member in klass.members:
            if member not in members:
                sym = new.lookup_member(new_cls, member)
                if sym is not None and sym.kind == "function":
                    members[member] = sym
    if old_sym is not None:
        shape = old.body_shape(old_sym)
        same = [m for m, s in members.items() if shape and new.body_shape(s) == shape]
        if len(same) == 1:
            return same[0]
    close = difflib.get_close_matches(name, list(members), n=1, cutoff=0.75)
    return close[0] if close else None
