"""Overrides against the upstream bodies they replace, at a base tree and a new tree.

Shared by the RK402 check, ``port`` (which merges the drift) and ``corpus lock`` (which
records the base fingerprints), so all three agree on what "the base body" is.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from rebasekit.analysis.bodies import Definition, changed_lines, definitions, similarity, unified
from rebasekit.corpus.models import PatchClass, PluginCorpus
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.cache import tree_memo

MIRROR_THRESHOLD = 0.5  # an override sharing at least half its lines with the base is a copy
_FUNCTION_KINDS = ("method", "property", "staticmethod", "classmethod")


@dataclass
class OverrideDrift:
    patch: PatchClass
    attr: str
    attr_line: int
    old_sym: Symbol
    new_sym: Symbol
    old_def: Definition
    new_def: Definition
    ours: Definition
    similarity: float
    diff: str

    @property
    def mirrors(self) -> bool:
        return self.similarity >= MIRROR_THRESHOLD

    @property
    def changed(self) -> tuple[int, int]:
        return changed_lines(self.old_def.source, self.new_def.source)


def symbol_definition(sym: Symbol) -> Definition | None:
    """The :class:`Definition` of an index symbol (its own lines, dedented)."""
    try:
        defs = definitions(textwrap.dedent(sym.source), nested=False)
    except SyntaxError:
        return None
    return defs.get(sym.name)


def plugin_definitions(corpus: PluginCorpus, relpath: str) -> dict[str, Definition]:
    """Definitions of one plugin file, from the corpus's text and syntax tree."""
    module = corpus.module(relpath)
    if module is None:
        return {}
    return definitions(corpus.source_text(relpath), tree=module)


def override_member(
    index: CodeIndex, patch: PatchClass | None, name: str, *, target: str | None = None
) -> Symbol | None:
    """What the override replaces at ``index``: a class member (MRO) or a module function.

    The target is ``patch.target`` unless given by name.
    """
    target_name = target if target is not None else (patch.target if patch is not None else None)
    if not target_name:
        return None
    owner = index.resolve(target_name)
    if owner is None:
        return None
    if owner.kind == "class":
        sym = index.lookup_member(owner, name)
    elif owner.kind == "module":
        sym = index.resolve(f"{owner.qualname}.{name}")
    else:
        return None
    return sym if sym is not None and sym.kind == "function" else None


@tree_memo
def member_fingerprint(index: CodeIndex, target: str | None, name: str) -> str | None:
    """Body fingerprint of what an override of ``target.name`` replaces at ``index``."""
    if not target:
        return None
    sym = override_member(index, None, name, target=target)
    defn = symbol_definition(sym) if sym is not None else None
    return defn.fingerprint if defn is not None else None


def overrides(corpus: PluginCorpus):
    """(patch, attribute, plugin Definition) for every function-like override."""
    for patch in corpus.patches:
        defs = plugin_definitions(corpus, patch.relpath)
        for attr in patch.attributes:
            if attr.kind not in _FUNCTION_KINDS:
                continue
            key = f"{patch.name}.{attr.name}" if patch.is_class else attr.source
            ours = defs.get(key) if key else None
            if ours is not None:
                yield patch, attr, ours


def override_drifts(corpus: PluginCorpus, base: CodeIndex, new: CodeIndex) -> list[OverrideDrift]:
    """Overrides whose upstream definition's body differs between ``base`` and ``new``.

    Two checks of one scan ask for the same drifts (RK402 and RK312); they are computed
    once per corpus and base and kept on ``new`` (the objects themselves are the key, so
    another corpus or base that happens to reuse an ``id`` is a miss).
    """
    memo: dict = new.__dict__.setdefault("_override_drifts", {})
    hit = memo.get((id(corpus), id(base)))
    if hit is not None and hit[0] is corpus and hit[1] is base:
        return list(hit[2])
    out = _override_drifts(corpus, base, new)
    memo[(id(corpus), id(base))] = (corpus, base, out)
    return list(out)


def _override_drifts(corpus: PluginCorpus, base: CodeIndex, new: CodeIndex) -> list[OverrideDrift]:
    out: list[OverrideDrift] = []
    for patch, attr, ours in overrides(corpus):
        old_fp = member_fingerprint(base, patch.target, attr.name)
        new_fp = member_fingerprint(new, patch.target, attr.name)
        if old_fp is None or new_fp is None or old_fp == new_fp:
            continue  # the cheap, cached test first: most overridden bodies did not change
        old_sym, new_sym = (
            override_member(base, patch, attr.name),
            override_member(new, patch, attr.name),
        )
        if old_sym is None or new_sym is None:
            continue
        old_def, new_def = symbol_definition(old_sym), symbol_definition(new_sym)
        if old_def is None or new_def is None:
            continue
        diff = unified(
            old_def.source,
            new_def.source,
            f"{old_sym.relpath}@{base.tree.version}",
            f"{new_sym.relpath}@{new.tree.version}",
        )
        out.append(
            OverrideDrift(
                patch,
                attr.name,
                attr.lineno,
                old_sym,
                new_sym,
                old_def,
                new_def,
                ours,
                similarity(ours, old_def),
                diff,
            )
        )
    return out
