"""``vllm.envs`` attributes: which ones the plugin reads, which ones a tree defines.

``vllm.envs`` serves its variables from a module ``__getattr__`` over the
``environment_variables`` dict (with ``TYPE_CHECKING`` annotations for the type
checker), so the index cannot tell a removed variable from a dynamic one. This module
reads both shapes the way the file is written across releases: keys of the
``environment_variables`` literal (and ``environment_variables["X"] = ...`` /
``.update({...})`` additions) plus every module-level name (assignments, also under
``if TYPE_CHECKING:``, functions, imports).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rebasekit.analysis.pluginclasses import expand, import_map
from rebasekit.astutil import children, dotted, parse_text
from rebasekit.corpus.models import PluginCorpus, corpus_memo
from rebasekit.index import CodeIndex
from rebasekit.index.cache import content_memo

ENVS = "envs"
_REGISTRY = "environment_variables"


@dataclass(frozen=True)
class EnvRead:
    """One read of ``vllm.envs.NAME`` in plugin code."""

    relpath: str
    line: int
    name: str
    text: str  # as written (``envs.VLLM_X``)
    in_function: str | None


def _dict_keys(node: ast.expr | None) -> set[str]:
    if not isinstance(node, ast.Dict):
        return set()
    return {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def _names_in(body: list[ast.stmt], out: set[str]) -> None:
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    out.add(t.id)
                    if t.id == _REGISTRY:
                        out |= _dict_keys(stmt.value)
                elif (
                    isinstance(t, ast.Subscript)
                    and dotted(t.value) == _REGISTRY
                    and isinstance(t.slice, ast.Constant)
                    and isinstance(t.slice.value, str)
                ):
                    out.add(t.slice.value)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            out.add(stmt.target.id)
            if stmt.target.id == _REGISTRY:
                out |= _dict_keys(stmt.value)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
        elif (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and dotted(stmt.value.func) == f"{_REGISTRY}.update"
            and stmt.value.args
        ):
            out |= _dict_keys(stmt.value.args[0])
        elif isinstance(stmt, ast.If):
            _names_in(stmt.body, out)
            _names_in(stmt.orelse, out)
        elif isinstance(stmt, ast.Try):
            _names_in(stmt.body, out)
            for handler in stmt.handlers:
                _names_in(handler.body, out)


def defined_names(index: CodeIndex, package: str = "vllm") -> set[str] | None:
    """Every name ``<package>.envs`` provides at ``index``; None when it has no such module.

    The names are a function of the module's text alone and are kept in the index's
    cache under it: the module is large (90 kB in recent releases) and read for this only.
    """
    facts = index.module(f"{package}.{ENVS}")
    if facts is None:
        return None
    text = index.text(facts.relpath)
    names = content_memo(
        index.cache.derived(),
        "envs_defined_names",
        (text,),
        lambda: _defined_in(text),
        list[str] | None,
    )
    return set(names) if names is not None else None


def _defined_in(text: str) -> list[str] | None:
    """The names :func:`_names_in` finds in ``text``, sorted; None if it does not parse."""
    module = parse_text(text)
    if module is None:
        return None
    out: set[str] = set()
    _names_in(module.body, out)
    return sorted(out)


def env_reads(corpus: PluginCorpus, package: str = "vllm") -> tuple[list[EnvRead], set[str]]:
    """Reads of ``<package>.envs.X`` in the plugin, and the names the plugin itself sets
    or probes (``envs.X = ...``, ``hasattr(envs, "X")``, ``getattr(envs, "X", default)``)."""
    return corpus_memo(corpus, ("env_reads", package), lambda: _env_reads(corpus, package))


def _env_reads(corpus: PluginCorpus, package: str) -> tuple[list[EnvRead], set[str]]:
    envs_mod = f"{package}.{ENVS}"
    reads: list[EnvRead] = []
    own: set[str] = set()
    for imp in corpus.imports:
        if imp.module == envs_mod and imp.name and imp.name != "*":
            reads.append(
                EnvRead(
                    imp.relpath,
                    imp.lineno,
                    imp.name,
                    f"from {envs_mod} import {imp.name}",
                    imp.in_function,
                )
            )
    for relpath in corpus.parsed_relpaths():
        if ENVS not in corpus.source_text(relpath):
            continue  # a file that never spells "envs" reads none of them
        names = import_map(corpus, relpath)
        if not names:
            continue  # nor does one that imports nothing from upstream (its tree is not needed)
        module = corpus.module(relpath)
        if module is None:
            continue
        for func, node, guarded in _walk_with_function(module):
            if isinstance(node, ast.Call) and dotted(node.func) in ("hasattr", "getattr"):
                if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                    owner = expand(names, dotted(node.args[0]))
                    if owner == envs_mod and isinstance(node.args[1].value, str):
                        own.add(node.args[1].value)
                continue
            if not isinstance(node, ast.Attribute):
                continue
            full = expand(names, dotted(node))
            if full is None or not full.startswith(envs_mod + "."):
                continue
            name = full[len(envs_mod) + 1 :]
            if "." in name:
                continue  # the inner part of a longer chain; the outer node is read too
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                own.add(name)
                continue
            if guarded:
                continue  # read under ``try:``: a missing variable is handled there
            reads.append(EnvRead(relpath, node.lineno, name, ast.unparse(node), func))
    return reads, own


def _walk_with_function(module: ast.Module):
    """(enclosing function qualname or None, node, inside a ``try:`` body) for every node."""
    stack: list[tuple[ast.AST, str | None, bool]] = [(module, None, False)]
    while stack:
        node, func, guarded = stack.pop()
        tried = {id(s) for s in node.body} if isinstance(node, ast.Try) and node.handlers else set()
        for child in children(node):
            inner = func
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = child.name if func is None else f"{func}.{child.name}"
            inside = guarded or id(child) in tried
            yield func, child, inside
            stack.append((child, inner, inside))
