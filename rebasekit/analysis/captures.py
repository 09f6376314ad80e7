"""Upstream attributes captured into plugin variables outside patch classes.

``_orig_forward = Runner.forward`` at module level (or in a function the plugin calls
at load) raises ``AttributeError`` the moment upstream drops ``forward``, exactly like
an ``_orig_`` alias in a patch body; no import names it, so the import checks never
look. Code under ``try:``, under an ``if`` that probes with ``hasattr``/``getattr``, and
version-gated branches that do not run at the scanned release are skipped: they already
handle (or never meet) the missing attribute.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rebasekit.analysis.pluginclasses import expand, import_map
from rebasekit.astutil import dotted, walk
from rebasekit.corpus import version_gates
from rebasekit.corpus.models import PluginCorpus


@dataclass(frozen=True)
class Capture:
    """``name = <upstream dotted>`` (or ``getattr(X, "attr")``) outside a patch class."""

    relpath: str
    line: int
    name: str  # the variable assigned
    target: str  # the upstream dotted name captured
    scope: str  # "module" or the enclosing function's qualname


def _captured(value: ast.expr) -> str | None:
    if isinstance(value, ast.Attribute):
        return dotted(value)
    if (
        isinstance(value, ast.Call)
        and dotted(value.func) == "getattr"
        and len(value.args) == 2
        and isinstance(value.args[1], ast.Constant)
        and isinstance(value.args[1].value, str)
    ):
        owner = dotted(value.args[0])
        return f"{owner}.{value.args[1].value}" if owner else None
    return None


def _probes(test: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Call) and dotted(n.func) in ("hasattr", "getattr") for n in walk(test)
    )


def _visit(
    body: list[ast.stmt],
    scope: str | None,
    where: tuple[str, dict[str, str], set[int], str | None],
    out: list[Capture],
) -> None:
    relpath, names, patch_lines, version = where
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            if stmt.lineno not in patch_lines:
                _visit(stmt.body, f"{scope}.{stmt.name}" if scope else stmt.name, where, out)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _visit(stmt.body, f"{scope}.{stmt.name}" if scope else stmt.name, where, out)
        elif isinstance(stmt, ast.If):
            if _probes(stmt.test):
                continue
            branches = version_gates.gate(stmt.test)
            then_spec, else_spec = branches if branches else (None, None)
            if version_gates.runs_at(then_spec, version):
                _visit(stmt.body, scope, where, out)
            if version_gates.runs_at(else_spec, version):
                _visit(stmt.orelse, scope, where, out)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.For, ast.While)):
            _visit(stmt.body, scope, where, out)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            captured = expand(names, _captured(stmt.value))
            if isinstance(target, ast.Name) and captured:
                out.append(Capture(relpath, stmt.lineno, target.id, captured, scope or "module"))


def captures(corpus: PluginCorpus, version: str | None) -> list[Capture]:
    """Every capture outside patch classes that runs at ``version`` (``try:`` bodies skipped)."""
    out: list[Capture] = []
    for relpath in corpus.parsed_relpaths():
        names = import_map(corpus, relpath)
        if not names:
            continue  # a file that imports nothing from upstream captures nothing of it
        module = corpus.module(relpath)
        if module is None:
            continue
        patch_lines = {p.lineno for p in corpus.patches if p.relpath == relpath}
        where = (relpath, names, patch_lines, version)
        _visit(module.body, None, where, out)
    return out
