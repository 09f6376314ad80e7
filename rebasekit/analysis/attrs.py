"""Instance attributes an override relies on, and how the target class provides them.

A patched ``__init__`` that calls the original and then reads ``self.positions.gpu``
depends on two facts nothing imports: that the class still assigns ``positions``, and
that it still assigns the same *kind* of value. This module answers both per attribute,
over the class and its in-tree bases, by reading the ``self.X = ...`` statements.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from rebasekit.analysis.defnodes import def_node
from rebasekit.analysis.shapes import AttrValue, self_assignments
from rebasekit.astutil import walk
from rebasekit.corpus.constructed import constructed_class_names
from rebasekit.corpus.extract import ORIG_PREFIX
from rebasekit.corpus.models import PatchClass, PluginCorpus
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.cache import tree_memo


@dataclass
class AttrUse:
    """One ``self.X`` the plugin reads on a patched instance, and what it does with it."""

    attr: str
    line: int
    method: str
    accessors: list[str] = field(default_factory=list)  # ``.gpu`` in ``self.X.gpu``


def patch_own_names(corpus: PluginCorpus, patch: PatchClass) -> frozenset[str]:
    """Names the patch itself provides: its attributes and every ``self.X = ...`` it makes.

    Kept per corpus and patch: several checks ask for the same patch many times, and
    the corpus never changes after extraction.
    """
    memo: dict[int, tuple[PatchClass, frozenset[str]]] = corpus.__dict__.setdefault(
        "_own_names", {}
    )
    held = memo.get(id(patch))
    if held is None or held[0] is not patch:  # the patch is held, so its id is not reused
        held = memo[id(patch)] = (patch, frozenset(_patch_own_names(corpus, patch)))
    return held[1]


def _patch_own_names(corpus: PluginCorpus, patch: PatchClass) -> set[str]:
    names = {a.name for a in patch.attributes}
    # what the whole patch set puts on the same target (another file may add a helper)
    names |= {a.name for p in corpus.patches if p.target == patch.target for a in p.attributes}
    if not patch.is_class:  # installed functions: what each of them assigns on self
        return names | {
            n for func in _installed_functions(corpus, patch) for n in self_assignments(func)
        }
    node = corpus.class_node(patch)
    if node is not None:
        for func in node.body:
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names |= set(self_assignments(func))
        module = corpus.module(patch.relpath)
        if module is not None:  # fields of the plugin subclass a patched __new__ returns
            names |= constructed_class_names(module, node)
    return names


def _installed_functions(
    corpus: PluginCorpus, patch: PatchClass
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The plugin functions an assignment patch installs (found by their first line)."""
    module = corpus.module(patch.relpath)
    if module is None:
        return []
    lines = {a.lineno for a in patch.attributes if a.kind in ("method", "property")}
    return [
        n
        for n in walk(module)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno in lines
    ]


def _sets_computed_names(corpus: PluginCorpus, patch: PatchClass) -> bool:
    node = corpus.class_node(patch)
    funcs = [node] if node is not None else _installed_functions(corpus, patch)
    return any(
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "setattr"
        and len(call.args) == 3
        and isinstance(call.args[0], ast.Name)
        and call.args[0].id == "self"
        and not isinstance(call.args[1], ast.Constant)
        for func in funcs
        for call in walk(func)
    )


def attribute_uses(
    corpus: PluginCorpus, patch: PatchClass, *, per_method: bool = False
) -> list[AttrUse]:
    """``self.X`` reads in the patch's methods that the patch does not provide itself.

    The reads are the corpus's (:attr:`PatchClass.self_reads`, recorded at extraction);
    one use per attribute (with ``per_method``: per attribute and method, since each
    method that reads it must be fixed when it goes); the first read wins and the
    accessors of every read it stands for are kept.
    """
    if patch.is_class and corpus.class_node(patch) is None:
        return []
    if _sets_computed_names(corpus, patch):
        return []  # setattr(self, name, ...) with a computed name: any attribute may be set
    own = patch_own_names(corpus, patch)
    uses: dict[tuple[str, str], AttrUse] = {}
    for read in patch.self_reads:
        attr = read.attr
        if (
            attr in own
            or attr.startswith(ORIG_PREFIX)
            or (attr.startswith("__") and attr.endswith("__"))
        ):
            continue
        key = (attr, read.method if per_method else "")
        use = uses.get(key)
        if use is None or read.lineno < use.line:
            use = uses[key] = AttrUse(attr, read.lineno, read.method, use.accessors if use else [])
        use.accessors += [a for a in read.accessors if a not in use.accessors]
    return sorted(uses.values(), key=lambda u: (u.line, u.method))


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
