"""Forks of a plugin, resolved against trees: declared and detected, with their drift.

Shared by the RK403/RK404 checks, ``port`` and ``corpus lock``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rebasekit.analysis.bodies import DefNode, definitions
from rebasekit.analysis.forkdecl import (
    ForkCandidate,
    ForkDecl,
    ForkDrift,
    ForkInputs,
    detect_fork,
    file_fingerprints,
    fork_drift,
)
from rebasekit.corpus.models import PluginCorpus
from rebasekit.index import CodeIndex
from rebasekit.index.cache import DataStore, content_memo

if TYPE_CHECKING:  # the interface only: trees are opened by the loaders
    from rebasekit.upstream import UpstreamTree


@dataclass
class ForkState:
    decl: ForkDecl
    plugin_text: str
    base_text: str | None  # upstream file at the recorded version (None: unavailable)
    base_error: str | None
    drift: ForkDrift | None
    candidate: ForkCandidate | None = None  # set for detected (undeclared) forks


def plugin_text(corpus: PluginCorpus, relpath: str) -> str | None:
    try:
        return corpus.source_text(relpath)
    except OSError:
        return None


def _read(tree: UpstreamTree, path: str) -> str | None:
    try:
        return tree.read_text(path) if tree.exists(path) else None
    except OSError:
        return None


def cached_fingerprints(store: DataStore, text: str) -> dict[str, str]:
    """:func:`file_fingerprints` of ``text``, kept in ``store`` by the text itself.

    Fork drift compares every definition of two large upstream files; their
    fingerprints are a function of the text alone, so a warm scan reads them back.
    """
    return content_memo(
        store, "file_fingerprints", (text,), lambda: file_fingerprints(text), dict[str, str]
    )


def _cached_detect(
    store: DataStore,
    relpath: str,
    text: str,
    candidates: dict[str, str],
    tree: Callable[[], ast.Module | None],
) -> ForkCandidate | None:
    """:func:`detect_fork`, kept in ``store`` under the plugin file and every candidate's text.

    ``tree()`` is ``text`` parsed (made only on a miss), so it adds nothing to the key.
    """
    parts = (relpath, text, tuple(sorted(candidates.items())))
    return content_memo(
        store,
        "detect_fork",
        parts,
        lambda: detect_fork(relpath, text, candidates, tree()),
        ForkCandidate | None,
    )


def _top_level_names(
    store: DataStore, text: str, tree: Callable[[], ast.Module | None]
) -> list[str] | None:
    """Names of the top-level definitions of ``text``, first of each name first (the keys
    :func:`definitions` would give, without their texts); None when it does not parse.

    Kept in ``store`` under the text (``tree()`` is the text parsed, made only on a miss):
    with them a warm scan needs no syntax tree of a plugin file that no other analysis
    reads.
    """

    def compute() -> list[str] | None:
        module = tree()
        if module is not None:
            return list(dict.fromkeys(n.name for n in module.body if isinstance(n, DefNode)))
        try:
            return list(definitions(text, nested=False))
        except SyntaxError:
            return None

    return content_memo(store, "top_level_names", (text,), compute, list[str] | None)


def undeclared_forks(
    corpus: PluginCorpus, base: CodeIndex, declared: set[str]
) -> list[ForkCandidate]:
    """Plugin modules that copy one upstream file of ``base`` without declaring it."""
    out: list[ForkCandidate] = []
    for f in corpus.files:
        if f.relpath in declared or f.syntax_error:
            continue
        text = plugin_text(corpus, f.relpath)
        if text is None:
            continue
        store = base.cache.derived()
        tree = functools.partial(corpus.module, f.relpath)
        names = _top_level_names(store, text, tree)
        if names is None:
            continue
        counts: dict[str, int] = {}
        for name in names:
            if name.startswith("__"):
                continue
            for sym in base.find_definitions(name, kinds=("class", "function")):
                counts[sym.relpath] = counts.get(sym.relpath, 0) + 1
        cands = {p: base.text(p) for p, n in counts.items() if n >= 2}
        found = _cached_detect(store, f.relpath, text, cands, tree) if cands else None
        if found is not None:
            out.append(found)
    return out


def fork_states(
    corpus: PluginCorpus, forks: ForkInputs, base: CodeIndex | None, new: CodeIndex
) -> list[ForkState]:
    """Every declared fork, then every detected one (recorded at ``base``), with its drift at ``new``.

    ``forks`` holds the declarations and the tree of each recorded version, opened by
    the caller (:func:`rebasekit.load.load_forks`): nothing is read from the network here.
    """
    states: list[ForkState] = []
    decls = forks.decls
    store = new.cache.derived()

    def fingerprints(text: str) -> dict[str, str]:
        return cached_fingerprints(store, text)

    for decl in decls:
        ours = plugin_text(corpus, decl.plugin_relpath) or ""
        base_tree = forks.trees[decl.version]
        if isinstance(base_tree, str):
            base_text, error = None, base_tree
        else:
            base_text, error = _read(base_tree, decl.upstream_path), None
            if base_text is None:
                error = f"{decl.upstream_path} does not exist at {decl.version}"
        drift = (
            fork_drift(
                decl,
                ours,
                base_text,
                _read(new.tree, decl.upstream_path),
                corpus.module(decl.plugin_relpath),
                fingerprints,
            )
            if base_text is not None
            else None
        )
        states.append(ForkState(decl, ours, base_text, error, drift))
    ref = base or new
    for cand in undeclared_forks(corpus, ref, {d.plugin_relpath for d in decls}):
        decl = ForkDecl(
            cand.plugin_relpath, cand.upstream_path, ref.tree.version or "?", "detected"
        )
        ours = plugin_text(corpus, cand.plugin_relpath) or ""
        base_text = ref.text(cand.upstream_path)
        drift = fork_drift(
            decl,
            ours,
            base_text,
            _read(new.tree, cand.upstream_path),
            corpus.module(cand.plugin_relpath),
            fingerprints,
        )
        states.append(ForkState(decl, ours, base_text, None, drift, cand))
    return states
