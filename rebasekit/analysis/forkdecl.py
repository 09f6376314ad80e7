"""Forked files: plugin copies of whole upstream files, declared or not.

A fork is declared by a header comment in its first lines::

    # rebasekit: fork-of vllm/v1/sample/sampler.py@0.26.0

or in the plugin project's ``pyproject.toml``::

    [tool.rebasekit.forks]
    "myplugin/sampler.py" = "vllm/v1/sample/sampler.py@0.26.0"

(keys are relative to the folder holding ``pyproject.toml``). An undeclared fork is a
plugin module most of whose definitions share name *and* body with one upstream file;
it is treated as a fork at the old pin and the header to add is suggested.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from rebasekit.analysis.bodies import Definition, definitions, similarity

if TYPE_CHECKING:  # the interface only: trees are opened by the loaders
    from rebasekit.upstream import UpstreamTree

HEADER_RE = re.compile(r"^#\s*rebasekit:\s*fork-of\s+(?P<path>[^\s@]+)@(?P<version>\S+)\s*$")
_HEADER_LINES = 10
MIN_SHARED = 2  # an undeclared fork shares at least this many definitions ...
MIN_SIMILAR = 0.6  # ... whose bodies are at least this similar


@dataclass(frozen=True)
class ForkDecl:
    """``plugin_relpath`` (relative to the corpus root) copies ``upstream_path`` at ``version``."""

    plugin_relpath: str
    upstream_path: str
    version: str
    origin: str  # "header" | "pyproject" | "detected"
    header_line: int | None = None

    def declaration(self) -> str:
        return f"# rebasekit: fork-of {self.upstream_path}@{self.version}"


@dataclass(frozen=True)
class ForkInputs:
    """Declared forks and the upstream tree of every version they were recorded at.

    ``trees`` maps a version to its tree, or to the one-line reason it could not be opened.
    """

    decls: tuple[ForkDecl, ...] = ()
    trees: Mapping[str, UpstreamTree | str] = field(default_factory=lambda: MappingProxyType({}))


def header_decl(relpath: str, text: str) -> ForkDecl | None:
    """The fork header of one plugin file, if its first lines carry one."""
    for i, line in enumerate(text.splitlines()[:_HEADER_LINES], start=1):
        m = HEADER_RE.match(line.strip())
        if m:
            return ForkDecl(relpath, m["path"], m["version"], "header", i)
    return None


@dataclass
class DefChange:
    """One upstream definition's fate between the recorded version and NEW."""

    qualname: str
    status: str  # "changed" | "added" | "removed"
    forked: bool  # the plugin file defines it too
    old: Definition | None = None
    new: Definition | None = None


@dataclass
class ForkDrift:
    decl: ForkDecl
    changes: list[DefChange] = field(default_factory=list)
    module_level_changed: bool = False  # imports/constants outside definitions changed
    missing_upstream: bool = False  # the upstream file is gone at NEW

    @property
    def forked_changes(self) -> list[DefChange]:
        return [c for c in self.changes if c.forked]


def _module_level(text: str, defs: dict[str, Definition]) -> list[str]:
    lines = text.splitlines()
    covered: set[int] = set()
    for d in defs.values():
        if "." not in d.qualname:
            covered |= set(range(d.lineno, d.end_lineno + 1))
    return [
        ln.strip()
        for i, ln in enumerate(lines, start=1)
        if i not in covered and ln.strip() and not ln.strip().startswith("#")
    ]


def fork_drift(
    decl: ForkDecl,
    plugin_text: str,
    base_text: str,
    new_text: str | None,
    plugin_tree: ast.Module | None = None,
    fingerprints: Callable[[str], Mapping[str, str]] | None = None,
) -> ForkDrift:
    """Group the upstream file's changes from ``base_text`` to ``new_text`` by definition.

    ``plugin_tree`` is ``plugin_text`` as the corpus parsed it (else it is parsed here).
    ``fingerprints`` gives every definition's body fingerprint of a text by qualname (a
    cache by content, :func:`file_fingerprints`); without it each is computed here.
    """
    drift = ForkDrift(decl)
    if new_text is None:
        drift.missing_upstream = True
        return drift
    try:
        ours = definitions(plugin_text, tree=plugin_tree)
        old = definitions(base_text)
        new = definitions(new_text)
    except SyntaxError:
        return drift
    old_fps = fingerprints(base_text) if fingerprints is not None else None
    new_fps = fingerprints(new_text) if fingerprints is not None else None
    for qual in sorted(set(old) | set(new)):
        o, n = old.get(qual), new.get(qual)
        if o is not None and n is not None:
            same = (
                old_fps[qual] == new_fps[qual]
                if old_fps is not None and new_fps is not None
                else o.fingerprint == n.fingerprint
            )
            if same:
                continue
        if o is not None and n is not None and o.kind == "class":
            # A class whose only changes are in methods is reported through its methods.
            own_o = [
                m for m in o.node.body if not hasattr(m, "name") or f"{qual}.{m.name}" not in old
            ]
            own_n = [
                m for m in n.node.body if not hasattr(m, "name") or f"{qual}.{m.name}" not in new
            ]
            if [ast.dump(x) for x in own_o] == [ast.dump(x) for x in own_n]:
                continue
        status = "changed" if o and n else ("added" if n else "removed")
        drift.changes.append(DefChange(qual, status, qual in ours, o, n))
    drift.module_level_changed = _module_level(base_text, old) != _module_level(new_text, new)
    return drift


def file_fingerprints(text: str) -> dict[str, str]:
    """Body fingerprint of every definition of ``text`` (methods too), by qualname."""
    return {qual: d.fingerprint for qual, d in definitions(text).items()}


@dataclass
class ForkCandidate:
    """A plugin module that looks like an undeclared copy of ``upstream_path``."""

    plugin_relpath: str
    upstream_path: str
    shared: list[str]
    similar: list[str]


def detect_fork(
    plugin_relpath: str,
    plugin_text: str,
    candidates: dict[str, str],
    plugin_tree: ast.Module | None = None,
) -> ForkCandidate | None:
    """The upstream file (among ``candidates``: relpath -> text) this module copies, if any.

    Needs at least :data:`MIN_SHARED` same-named top-level definitions of which more than
    half have bodies at least :data:`MIN_SIMILAR` alike; the best such file wins.
    """
    try:
        ours = dict(definitions(plugin_text, nested=False, tree=plugin_tree))
    except SyntaxError:
        return None
    best: ForkCandidate | None = None
    for upath, text in sorted(candidates.items()):
        try:
            theirs = definitions(text, nested=False)
        except SyntaxError:
            continue
        shared = sorted(set(ours) & set(theirs))
        if len(shared) < MIN_SHARED:
            continue
        similar = [q for q in shared if similarity(ours[q], theirs[q]) >= MIN_SIMILAR]
        if len(similar) * 2 <= len(shared) or len(similar) < MIN_SHARED:
            continue
        if best is None or len(similar) > len(best.similar):
            best = ForkCandidate(plugin_relpath, upath, shared, similar)
    return best
