"""Overrides against the upstream bodies they replace, at a base tree and a new tree.

Shared by the RK402 check, ``port`` (which merges the drift) and ``corpus lock`` (which
records the base fingerprints), so all three agree on what "the base body" is.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from rebasekit.corpus.models import PatchClass, PluginCorpus
from rebasekit.drift.bodies import Definition, definitions, similarity, unified, changed_lines
from rebasekit.index import CodeIndex, Symbol

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
    try:
        return definitions(corpus.file_path(relpath).read_text())
    except (OSError, SyntaxError):
        return {}


def override_member(index: CodeIndex, patch: PatchClass, name: str) -> Symbol | None:
    """What the override replaces at ``index``: a class member (MRO) or a module function."""
    if not patch.target:
        return None
    target = index.resolve(patch.target)
    if target is None:
        return None
    if target.kind == "class":
        sym = index.lookup_member(target, name)
    elif target.kind == "module":
        sym = index.resolve(f"{target.qualname}.{name}")
    else:
        return None
    return sym if sym is not None and sym.kind == "function" else None


def overrides(corpus: PluginCorpus):
    """(patch, attribute, plugin Definition) for every function-like override."""
    for patch in corpus.patches:
        defs = plugin_definitions(corpus, patch.relpath)
        for attr in patch.attributes:
            if attr.kind not in _FUNCTION_KINDS:
                continue
            ours = defs.get(f"{patch.name}.{attr.name}")
            if ours is not None:
                yield patch, attr, ours


def override_drifts(corpus: PluginCorpus, base: CodeIndex, new: CodeIndex) -> list[OverrideDrift]:
    """Overrides whose upstream definition's body differs between ``base`` and ``new``."""
    out: list[OverrideDrift] = []
    for patch, attr, ours in overrides(corpus):
        old_sym, new_sym = override_member(base, patch, attr.name), override_member(new, patch, attr.name)
        if old_sym is None or new_sym is None:
            continue
        old_def, new_def = symbol_definition(old_sym), symbol_definition(new_sym)
        if old_def is None or new_def is None or old_def.fingerprint == new_def.fingerprint:
            continue
        diff = unified(old_def.source, new_def.source, f"{old_sym.relpath}@{base.tree.version}",
                       f"{new_sym.relpath}@{new.tree.version}")
        out.append(OverrideDrift(patch, attr.name, attr.lineno, old_sym, new_sym, old_def, new_def, ours,
                                 similarity(ours, old_def), diff))
    return out
