"""Plugin classes written as copies of an upstream class, without inheriting from it.

Model plugins copy a model class (``class MyLlamaForCausalLM(nn.Module)`` next to
upstream's ``LlamaForCausalLM``) and keep its interface, because upstream code calls the
copy exactly as it calls the original. Such a class is neither a patch nor a subclass,
so no override check sees it. It counts as a copy of upstream class ``U`` when

* the plugin file imports something from ``U``'s module;
* its name is ``U``'s with one run of words inserted (``Llama`` + ``SwiftKV`` +
  ``ForCausalLM``), or ``U``'s own name; and
* it defines at least ``MIN_SHARED`` of ``U``'s public methods (dunders do not count).

When several upstream classes qualify, the one sharing the most methods is taken, and
none on a tie.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from rebasekit.analysis.pluginclasses import plugin_classes
from rebasekit.corpus.models import PluginCorpus
from rebasekit.index import CodeIndex, Symbol

MIN_SHARED = 2
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]*|[a-z0-9]+")


@dataclass(frozen=True)
class MirrorClass:
    """A plugin class copied from ``upstream`` (resolved at the index it was found in)."""

    relpath: str
    node: ast.ClassDef
    upstream: Symbol
    shared: tuple[str, ...]  # method names both define (dunders included)


def words(name: str) -> list[str]:
    """CamelCase words of a class name (``LlamaSwiftKVForCausalLM`` -> Llama Swift KV For ...)."""
    return _WORD.findall(name)


def named_after(mine: str, theirs: str) -> bool:
    """``mine`` is ``theirs`` with one run of words inserted, or ``theirs`` itself."""
    a, b = words(mine), words(theirs)
    if a == b:
        return True
    if len(b) < 2 or len(a) <= len(b):
        return False
    extra = len(a) - len(b)
    return any(a[:i] + a[i + extra :] == b for i in range(len(a) - extra + 1))


def _methods(node: ast.ClassDef) -> set[str]:
    return {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def mirror_classes(corpus: PluginCorpus, index: CodeIndex) -> list[MirrorClass]:
    """Every plugin class (not a patch, not a subclass) that copies an upstream class."""
    bound = {(pc.relpath, pc.node.lineno) for pc in plugin_classes(corpus)}
    out: list[MirrorClass] = []
    for relpath in corpus.parsed_relpaths():
        modules = sorted({imp.module for imp in corpus.imports if imp.relpath == relpath})
        candidates: dict[str, Symbol] = {}
        for modname in modules:
            facts = index.module(modname)
            if facts is None:
                continue
            for name, fact in facts.defs.items():
                if fact.kind == "class":
                    sym = index.resolve(f"{modname}.{name}")
                    if sym is not None and sym.kind == "class":
                        candidates[sym.qualname] = sym
        if not candidates:
            continue
        for node in corpus.nodes(relpath, ast.ClassDef):
            if (relpath, node.lineno) in bound:
                continue
            mine = _methods(node)
            best: list[tuple[int, Symbol, tuple[str, ...]]] = []
            for cand in candidates.values():
                if not named_after(node.name, cand.name):
                    continue
                shared = tuple(sorted(mine & set(cand.members)))
                public = [n for n in shared if not n.startswith("__")]
                if len(public) >= MIN_SHARED:
                    best.append((len(public), cand, shared))
            best.sort(key=lambda t: -t[0])
            if best and (len(best) == 1 or best[0][0] > best[1][0]):
                out.append(MirrorClass(relpath, node, best[0][1], best[0][2]))
    return out
