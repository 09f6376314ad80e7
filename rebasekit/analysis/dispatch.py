"""A ``self.m(...)`` call written for the one subclass that runs its branch.

A base class may hold code for several subclasses, chosen by a string the instance
carries::

    if self.method == "fast":
        kwargs = self.build_inputs(n)      # only FastProposer defines build_inputs(n)

Upstream's ``build_inputs`` may no longer bind to ``(n)`` while the override of the one
subclass that runs the branch does. The evidence that only that subclass runs it is
where the plugin builds its classes: every plugin class it builds under a test against
the same string (``elif method == "fast": return FastProposer(...)``) overrides the
callee with a signature the call binds to. The string on ``self`` and the one the
factory tests are not proven to be the same value, so the finding is softened, not
dropped.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rebasekit.analysis.binding import CallShape, bind, drop_bound
from rebasekit.analysis.mentions import module_mentions, plugin_mentions
from rebasekit.astutil import FuncNode, dotted
from rebasekit.corpus.models import PluginCorpus
from rebasekit.index.visitor import signature_of

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class _Classes:
    """Every top-level plugin class by name (a name defined twice: both kept)."""

    by_name: dict[str, list[ast.ClassDef]]

    def bases(self, node: ast.ClassDef) -> list[str]:
        return [(dotted(b) or "").rsplit(".", 1)[-1] for b in node.bases]

    def subtree(self, root: str) -> set[str]:
        """``root`` and every plugin class deriving from it, by base name."""
        found = {root}
        grew = True
        while grew:
            grew = False
            for name, nodes in self.by_name.items():
                if name not in found and any(set(self.bases(n)) & found for n in nodes):
                    found.add(name)
                    grew = True
        return found

    def lookup(
        self, name: str, member: str, seen: frozenset[str] = frozenset()
    ) -> list[tuple[str, FuncNode]]:
        """Where ``name.member`` may come from in the plugin: (class, def) per definition."""
        out: list[tuple[str, FuncNode]] = []
        for node in self.by_name.get(name, []):
            own = next((f for f in node.body if isinstance(f, _FUNCS) and f.name == member), None)
            if own is not None:
                out.append((name, own))
                continue
            for base in self.bases(node):
                if base in self.by_name and base not in seen:
                    found = self.lookup(base, member, seen | {name})
                    if found:
                        out += found
                        break
        return out


def _classes(corpus: PluginCorpus) -> _Classes:
    memo = corpus.__dict__.setdefault("_dispatch_classes", [])
    if not memo:
        memo.append(_build_classes(corpus))
    return memo[0]


def _build_classes(corpus: PluginCorpus) -> _Classes:
    by_name: dict[str, list[ast.ClassDef]] = {}
    for relpath in corpus.parsed_relpaths():
        module = corpus.module(relpath)
        for node in module.body if module is not None else []:
            if isinstance(node, ast.ClassDef):
                by_name.setdefault(node.name, []).append(node)
    return _Classes(by_name)


def _guard_literals(tests: tuple[str, ...], *, self_only: bool) -> set[str]:
    """Strings the guards compare with (``==`` or ``in``); ``self_only``: only ``self.`` attributes."""
    out: set[str] = set()
    for text in tests:
        try:
            test = ast.parse(text, mode="eval").body
        except SyntaxError:
            continue
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            continue
        if self_only and not (dotted(test.left) or "").startswith("self."):
            continue
        out |= _literals(test.ops[0], test.comparators[0])
    return out


def _literals(op: ast.cmpop, right: ast.expr) -> set[str]:
    if isinstance(op, ast.Eq) and isinstance(right, ast.Constant) and isinstance(right.value, str):
        return {right.value}
    if isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        return {
            e.value for e in right.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        }
    return set()


def dispatched_override(
    corpus: PluginCorpus, owner: ast.ClassDef, method: str, name: str, line: int, shape: CallShape
) -> str | None:
    """Why ``self.name(...)`` at ``line`` of ``owner.method`` binds where it runs, or None."""
    func = next((f for f in owner.body if isinstance(f, _FUNCS) and f.name == method), None)
    if func is None:
        return None
    here = [
        m
        for m in module_mentions("", ast.Module(body=func.body, type_ignores=[])).get(name, [])
        if m.kind == "call" and m.line == line
    ]
    if len(here) != 1 or here[0].in_else:
        return None
    literals = _guard_literals(here[0].tests, self_only=True)
    if not literals:
        return None
    classes = _classes(corpus)
    family = classes.subtree(owner.name)
    built: dict[str, set[str]] = {}
    for cls in family:
        found = plugin_mentions(corpus).of(cls)
        if found is None:
            return None
        for m in found:
            if m.kind == "call":
                for lit in _guard_literals(m.tests, self_only=False) & literals:
                    built.setdefault(lit, set()).add(cls)
    if set(built) != literals:
        return None  # some string is never tied to a class the plugin builds
    binding: set[str] = set()
    for cls in set().union(*built.values()):
        defs = classes.lookup(cls, name)
        if not defs or any(where == owner.name for where, _ in defs):
            return None  # built there but runs the base's callee
        for where, f in defs:
            if not bind(shape, drop_bound(list(signature_of(f).params))).ok:
                return None
            binding.add(where)
    tested = " / ".join(repr(lit) for lit in sorted(literals))
    names = ", ".join(sorted(set().union(*built.values())))
    return (
        f"the call runs under a test of self against {tested}; where the plugin tests "
        f"that string it builds only {names}, whose own {name} "
        f"({', '.join(sorted(binding))}) binds to the call"
    )
