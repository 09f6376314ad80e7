"""Instance attributes an override relies on, and how the target class provides them.

A patched ``__init__`` that calls the original and then reads ``self.positions.gpu``
depends on two facts nothing imports: that the class still assigns ``positions``, and
that it still assigns the same *kind* of value. This module answers both per attribute,
over the class and its in-tree bases, by reading the ``self.X = ...`` statements.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from rebasekit.astutil import parse_text
from rebasekit.corpus.models import PatchClass, PluginCorpus
from rebasekit.drift.shapes import AttrValue, self_assignments
from rebasekit.drift.upstream import def_node
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.cache import tree_memo


@dataclass
class AttrUse:
    """One ``self.X`` the plugin reads on a patched instance, and what it does with it."""

    attr: str
    line: int
    method: str
    accessors: list[str] = field(default_factory=list)  # ``.gpu`` in ``self.X.gpu``


def patch_own_names(corpus: PluginCorpus, patch: PatchClass) -> set[str]:
    """Names the patch itself provides: its attributes and every ``self.X = ...`` it makes."""
    names = {a.name for a in patch.attributes}
    node = _patch_node(corpus, patch)
    if node is not None:
        for func in node.body:
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names |= set(self_assignments(func))
    return names


def _patch_node(corpus: PluginCorpus, patch: PatchClass) -> ast.ClassDef | None:
    try:
        module = parse_text(corpus.source_text(patch.relpath))
    except OSError:
        return None
    if module is None:
        return None
    for node in ast.walk(module):
        if (
            isinstance(node, ast.ClassDef)
            and node.name == patch.name
            and node.lineno == patch.lineno
        ):
            return node
    for node in ast.walk(module):
        if isinstance(node, ast.ClassDef) and node.name == patch.name:
            return node
    return None


def attribute_uses(corpus: PluginCorpus, patch: PatchClass) -> list[AttrUse]:
    """``self.X`` reads in the patch's methods that the patch does not provide itself."""
    own = patch_own_names(corpus, patch)
    node = _patch_node(corpus, patch)
    if node is None:
        return []
    uses: dict[str, AttrUse] = {}
    for func in node.body:
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) or not func.args.args:
            continue
        self_name = func.args.args[0].arg
        parents = {id(c): p for p in ast.walk(func) for c in ast.iter_child_nodes(p)}
        for sub in ast.walk(func):
            if not (
                isinstance(sub, ast.Attribute)
                and isinstance(sub.ctx, ast.Load)
                and isinstance(sub.value, ast.Name)
                and sub.value.id == self_name
            ):
                continue
            if (
                sub.attr in own
                or sub.attr.startswith("_orig_")
                or (sub.attr.startswith("__") and sub.attr.endswith("__"))
            ):
                continue
            use = uses.get(sub.attr)
            if use is None or sub.lineno < use.line:
                old_acc = use.accessors if use else []
                use = uses[sub.attr] = AttrUse(sub.attr, sub.lineno, func.name, old_acc)
            parent = parents.get(id(sub))
            if (
                isinstance(parent, ast.Attribute)
                and parent.value is sub
                and parent.attr not in use.accessors
            ):
                use.accessors.append(parent.attr)
    return sorted(uses.values(), key=lambda u: u.line)


@dataclass
class Provision:
    """How a class (with bases) provides an attribute: assignments and/or a class member."""

    assignments: list[tuple[str, AttrValue]]  # (Class.method, value)
    member: Symbol | None

    @property
    def provided(self) -> bool:
        return bool(self.assignments) or self.member is not None

    def kinds(self) -> set[tuple[str, str]]:
        return {
            (v.kind, v.detail) for _, v in self.assignments if v.kind in ("call", "literal", "none")
        }


def provision(index: CodeIndex, cls: Symbol, attr: str) -> Provision:
    """Every ``self.attr = ...`` in methods of ``cls``'s in-tree MRO, plus a class member."""
    found: list[tuple[str, AttrValue]] = []
    for klass in index.mro(cls):
        if attr in (klass.fact.instance_attrs if klass.fact else {}):
            found += class_assignments(index, klass.qualname).get(attr, [])
    return Provision(found, index.lookup_member(cls, attr))


@tree_memo
def class_assignments(index: CodeIndex, qualname: str) -> dict[str, list[tuple[str, AttrValue]]]:
    """``self.X = ...`` values per attribute in the methods of one class (not its bases).

    Patched classes are the biggest in the tree (a model runner runs to thousands of
    lines), so parsing them and classifying every assignment is cached per tree.
    """
    klass = index.resolve(qualname)
    node = def_node(klass) if klass is not None and klass.kind == "class" else None
    out: dict[str, list[tuple[str, AttrValue]]] = {}
    if node is None:
        return out
    for func in node.body:
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for name, values in self_assignments(func).items():
                for value in values:
                    line = (klass.lineno or 1) + value.line - 1
                    out.setdefault(name, []).append(
                        (
                            f"{klass.name}.{func.name}",
                            AttrValue(value.kind, value.detail, line, value.source),
                        )
                    )
    return out


def kind_changed(old: Provision, new: Provision) -> bool:
    """True when both sides assign concrete kinds and they share none."""
    ok, nk = old.kinds(), new.kinds()
    ok.discard(("none", "None"))
    nk.discard(("none", "None"))
    return bool(ok) and bool(nk) and not (ok & nk)
