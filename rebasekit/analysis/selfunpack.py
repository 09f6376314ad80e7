"""Unpackings the corpus's import-named calls do not cover: through ``self`` and with a star.

Inside a patch, ``a, b, c = self._prepare_inputs(...)`` and ``a, b, *rest =
self._orig_prepare_inputs(...)`` unpack what the patched upstream method returns, yet
neither call is named by an import. The callee is the target's member (the patch's own
definition only passes the original's tuple on when it calls the original; a patch that
replaces the method without calling it returns its own shape and is skipped).

A starred unpacking still binds when the tuple grows or shrinks, but the elements after
the named prefix (and, when the prefix itself is read positionally, the elements the
names now receive) follow the new order: a length change is the visible sign.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from rebasekit.analysis.callsites import Unpacking
from rebasekit.analysis.shapes import dotted
from rebasekit.analysis.wrapdeps import wrapper_use
from rebasekit.astutil import FuncNode, first_param, walk
from rebasekit.corpus.models import PatchClass, PluginCorpus, UpstreamCall, corpus_memo


@dataclass(frozen=True)
class StarUnpacking:
    """``a, b, *rest = f(...)``: ``prefix`` names before (and after) the star."""

    call: UpstreamCall
    prefix: int
    line: int


def _target_shape(node: ast.Assign) -> tuple[int, bool] | None:
    """(names, starred) of a tuple target; None for a plain name."""
    target = node.targets[0]
    if not isinstance(target, (ast.Tuple, ast.List)):
        return None
    starred = any(isinstance(e, ast.Starred) for e in target.elts)
    return len(target.elts) - (1 if starred else 0), starred


def _replaces_without_original(cls: ast.ClassDef, patch: PatchClass, name: str) -> bool:
    """The patch defines ``name`` and never calls the original from it."""
    aliases = {a.alias for a in patch.orig_aliases if a.attr == name}
    for stmt in cls.body:
        if isinstance(stmt, FuncNode) and stmt.name == name:
            return not wrapper_use(stmt, aliases, name).calls_original
    return False


def _self_callee(
    call: ast.Call, me: str | None, cls: ast.ClassDef, patch: PatchClass
) -> tuple[str, str | None] | None:
    """(upstream member, alias) a ``self.m(...)`` / ``Patch.m(self, ...)`` call reaches."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    if func.value.id not in {me, patch.name}:
        return None
    alias = next((a for a in patch.orig_aliases if a.alias == func.attr), None)
    if alias is not None:
        return alias.attr, alias.alias
    if _replaces_without_original(cls, patch, func.attr):
        return None
    return func.attr, None


def _patch_unpackings(corpus: PluginCorpus) -> list[tuple[UpstreamCall, int, bool, int]]:
    """Every unpacking of a ``self`` call in the patches (both lists below are cut from it)."""
    return corpus_memo(corpus, ("patch_unpackings",), lambda: list(_walk_patches(corpus)))


def _walk_patches(corpus: PluginCorpus) -> Iterator[tuple[UpstreamCall, int, bool, int]]:
    for patch in corpus.patches:
        cls = corpus.class_node(patch)
        if not patch.target or cls is None:
            continue
        for method in cls.body:
            if not isinstance(method, FuncNode):
                continue
            me = first_param(method)
            for node in walk(method):
                if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                    continue
                shape = _target_shape(node)
                found = _self_callee(node.value, me, cls, patch)
                if shape is None or found is None:
                    continue
                member, alias = found
                call = UpstreamCall(
                    patch.relpath,
                    node.value.lineno,
                    f"{patch.target}.{member}",
                    len(node.value.args),
                    tuple(k.arg for k in node.value.keywords if k.arg),
                    any(isinstance(a, ast.Starred) for a in node.value.args),
                    any(k.arg is None for k in node.value.keywords),
                    in_function=f"{patch.name}.{method.name}",
                    via_orig=alias,
                    patch=patch.name,
                    through_self=True,
                )
                yield call, shape[0], shape[1], node.lineno


def self_unpackings(corpus: PluginCorpus) -> list[Unpacking]:
    """Fixed-length unpackings of ``self.m(...)`` in patches (``_orig_`` aliases excluded:
    the corpus names those calls already)."""
    return [
        Unpacking(call, n, line)
        for call, n, starred, line in _patch_unpackings(corpus)
        if not starred and call.via_orig is None
    ]


def star_unpackings(corpus: PluginCorpus) -> list[StarUnpacking]:
    """Starred unpackings of upstream calls: through ``self`` in patches, and import-named."""
    return list(corpus_memo(corpus, ("star_unpackings",), lambda: _star_unpackings(corpus)))


def _star_unpackings(corpus: PluginCorpus) -> list[StarUnpacking]:
    out = [
        StarUnpacking(call, n, line)
        for call, n, starred, line in _patch_unpackings(corpus)
        if starred
    ]
    seen = {(u.call.relpath, u.line) for u in out}
    by_line: dict[tuple[str, int], list[UpstreamCall]] = {}
    for c in corpus.calls:
        by_line.setdefault((c.relpath, c.lineno), []).append(c)
    for relpath in sorted({c.relpath for c in corpus.calls}):
        module = corpus.module(relpath)
        if module is None:
            continue
        for node in corpus.nodes(relpath, ast.Assign):  # the corpus's one walk of the file
            if not isinstance(node.value, ast.Call):
                continue
            shape = _target_shape(node)
            if shape is None or not shape[1] or (relpath, node.lineno) in seen:
                continue
            name = (dotted(node.value.func) or "").rsplit(".", 1)[-1]
            calls = [
                c
                for c in by_line.get((relpath, node.value.lineno), [])
                if c.via_orig or c.callee.rsplit(".", 1)[-1] == name
            ]
            if calls:
                out.append(StarUnpacking(calls[0], shape[0], node.lineno))
    return out
