"""Overrides against the upstream bodies they replace, at a base tree and a new tree.

Shared by the RK402 check, ``port`` (which merges the drift) and ``corpus lock`` (which
records the base fingerprints), so all three agree on what "the base body" is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from rebasekit.analysis.bodies import (
    Definition,
    body_lines,
    changed_lines,
    definitions,
    lines_similarity,
    unified,
)
from rebasekit.corpus.models import PatchClass, PluginCorpus
from rebasekit.dedent import dedent
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.cache import DataStore, content_memo, tree_memo

MIRROR_THRESHOLD = 0.5  # an override sharing at least half its lines with the base is a copy
_FUNCTION_KINDS = ("method", "property", "staticmethod", "classmethod")


@dataclass
class OverrideDrift:
    """An override whose upstream body changed; what the checks compare is kept as text.

    ``old_def``/``new_def`` (syntax trees included) are parsed from the symbols' own lines
    on first use: the similarity, the diff and the changed-line counts come from a cache
    by content, so a warm scan parses only the originals a check walks.
    """

    patch: PatchClass
    attr: str
    attr_line: int
    old_sym: Symbol
    new_sym: Symbol
    ours: Definition
    similarity: float
    diff: str
    changed: tuple[int, int]  # (lines removed, lines added) from the old body to the new

    @property
    def mirrors(self) -> bool:
        return self.similarity >= MIRROR_THRESHOLD

    @functools.cached_property
    def old_def(self) -> Definition:
        return _definition_of(self.old_sym)

    @functools.cached_property
    def new_def(self) -> Definition:
        return _definition_of(self.new_sym)


def symbol_definition(sym: Symbol) -> Definition | None:
    """The :class:`Definition` of an index symbol (its own lines, dedented)."""
    return _text_definition(sym.name, sym.source)


def _text_definition(name: str, source: str) -> Definition | None:
    try:
        defs = definitions(dedent(source), nested=False)
    except SyntaxError:
        return None
    return defs.get(name)


def _definition_of(sym: Symbol) -> Definition:
    defn = symbol_definition(sym)
    if defn is None:  # the drift exists only because both parsed: the texts are the same
        raise ValueError(f"{sym.qualname} has no definition in its own lines")
    return defn


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
        compared = _cached_comparison(
            new.cache.derived(),
            tuple(body_lines(ours)),
            (old_sym.name, old_sym.source, f"{old_sym.relpath}@{base.tree.version}"),
            (new_sym.name, new_sym.source, f"{new_sym.relpath}@{new.tree.version}"),
        )
        if compared is None:
            continue
        similar, diff, changed = compared
        out.append(
            OverrideDrift(
                patch, attr.name, attr.lineno, old_sym, new_sym, ours, similar, diff, changed
            )
        )
    return out


_Side = tuple[str, str, str]  # a symbol's name, its own lines and its diff label


def _cached_comparison(
    store: DataStore, ours: tuple[str, ...], old: _Side, new: _Side
) -> tuple[float, str, tuple[int, int]] | None:
    """:func:`_comparison`, kept in ``store`` under the texts it reads (see ``content_memo``).

    Parsing the old and new originals for it was most of a warm scan's override drifts.
    """
    return content_memo(
        store,
        "override_comparison",
        (ours, old, new),
        lambda: _comparison(list(ours), old, new),
        tuple[float, str, tuple[int, int]] | None,
    )


def _comparison(
    ours: list[str], old: _Side, new: _Side
) -> tuple[float, str, tuple[int, int]] | None:
    """(similarity of the override to the old body, the old-to-new diff, changed-line counts).

    None when either original has no definition of its name in its own lines (it does
    not parse): then there is no drift to report.
    """
    old_def, new_def = _text_definition(old[0], old[1]), _text_definition(new[0], new[1])
    if old_def is None or new_def is None:
        return None
    return (
        lines_similarity(ours, body_lines(old_def)),
        unified(old_def.source, new_def.source, old[2], new[2]),
        changed_lines(old_def.source, new_def.source),
    )
