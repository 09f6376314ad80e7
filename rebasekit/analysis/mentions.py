"""Every place a file names an identifier: the evidence for "this code can run".

A function runs only if something calls it, and a method only on an instance someone
builds. Both are read from where the name is written: a call ``name(...)``, any other
load (a callback, ``getattr`` target), a string equal to it (``hasattr(x, "name")``,
``collective_rpc("name")``) or a dotted string ending in it (a class named by
configuration), and a class base. Annotations and ``isinstance`` checks name a class
without running or building anything, so they are left out.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rebasekit.astutil import children, parse_text
from rebasekit.corpus.models import PluginCorpus
from rebasekit.index import CodeIndex

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_CHECKS = ("isinstance", "issubclass")


@dataclass(frozen=True)
class Mention:
    """One spelling of a name; ``scope`` is the enclosing def/class chain ("" at module level)."""

    relpath: str
    line: int
    scope: str
    kind: str  # "call" | "ref" | "string" | "base" | "alias"
    member: str | None = None  # ``X.member`` (the name heads an attribute); alias: the new name
    slot: str | None = None  # string: ``obj.slot = "..."``; call: ``self.slot = X(...)``
    tests: tuple[str, ...] = ()  # call: the enclosing ``if`` tests (``and`` split)
    in_else: bool = False  # call: under some ``else`` branch
    dotted: bool = False  # a string naming a module path (``"pkg.mod.Name"``)
    bare: bool = False  # a plain name (not ``obj.name``): the module's binding decides


def _and_terms(test: ast.expr) -> list[str]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [t for v in test.values for t in _and_terms(v)]
    return [ast.unparse(test)]


class _Walker:
    def __init__(self, relpath: str) -> None:
        self.relpath = relpath
        self.out: dict[str, list[Mention]] = {}

    def add(self, name: str, mention: Mention) -> None:
        self.out.setdefault(name, []).append(mention)

    def walk(self, node: ast.AST, scope: str, tests: tuple[str, ...], in_else: bool) -> None:
        if isinstance(node, (*_FUNCS, ast.ClassDef)):
            inner = f"{scope}.{node.name}" if scope else node.name
            for dec in node.decorator_list:
                self.walk(dec, scope, tests, in_else)
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    name = (
                        base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
                    )
                    if name:
                        self.add(name, Mention(self.relpath, node.lineno, inner, "base"))
                for kw in node.keywords:
                    self.walk(kw.value, scope, tests, in_else)
            else:
                for default in [*node.args.defaults, *node.args.kw_defaults]:
                    if default is not None:
                        self.walk(default, scope, tests, in_else)
            for stmt in node.body:
                self.walk(stmt, inner, (), False)
            return
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname and alias.asname != alias.name:
                    # the name is spelled otherwise from here on: follow that spelling too
                    mention = Mention(self.relpath, node.lineno, scope, "alias", alias.asname)
                    self.add(alias.name, mention)
            return
        if isinstance(node, ast.If):
            self.walk(node.test, scope, tests, in_else)
            for stmt in node.body:
                self.walk(stmt, scope, (*tests, *_and_terms(node.test)), in_else)
            for stmt in node.orelse:
                self.walk(stmt, scope, tests, True)
            return
        if isinstance(node, ast.AnnAssign):
            for part in (node.target, node.value):
                if part is not None:
                    self.walk(part, scope, tests, in_else)
            return
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            self._assign(node, scope, tests, in_else)
        if isinstance(node, ast.Call):
            self._call(node, scope, tests, in_else)
            return
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self._string(node, scope, None)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            self.add(node.id, Mention(self.relpath, node.lineno, scope, "ref", bare=True))
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name):
                head = node.value
                mention = Mention(self.relpath, head.lineno, scope, "ref", node.attr, bare=True)
                self.add(head.id, mention)
                self.add(node.attr, Mention(self.relpath, node.lineno, scope, "ref"))
                return
            self.add(node.attr, Mention(self.relpath, node.lineno, scope, "ref"))
        for child in children(node):
            self.walk(child, scope, tests, in_else)

    def _assign(self, node: ast.Assign, scope: str, tests: tuple[str, ...], in_else: bool) -> None:
        target, value = node.targets[0], node.value
        if not isinstance(target, ast.Attribute):
            return
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            self._string(value, scope, target.attr)
            value.__dict__["_rk_seen"] = True
        elif (
            isinstance(value, ast.Call)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            value.__dict__["_rk_slot"] = target.attr

    def _string(self, node: ast.Constant, scope: str, slot: str | None) -> None:
        if node.__dict__.pop("_rk_seen", False) and slot is None:
            return
        text = node.value
        if not text or " " in text or len(text) > 200:
            return
        last = text.replace(":", ".").rsplit(".", 1)[-1]
        if last.isidentifier():
            dotted = last != text and all(
                p.isidentifier() for p in text.replace(":", ".").split(".")
            )
            mention = Mention(self.relpath, node.lineno, scope, "string", slot=slot, dotted=dotted)
            self.add(last, mention)

    def _call(self, node: ast.Call, scope: str, tests: tuple[str, ...], in_else: bool) -> None:
        func = node.func
        slot = node.__dict__.pop("_rk_slot", None)
        name = func.id if isinstance(func, ast.Name) else None
        if isinstance(func, ast.Attribute):
            name = func.attr
            if isinstance(func.value, ast.Name):
                head = func.value
                mention = Mention(self.relpath, head.lineno, scope, "ref", func.attr, bare=True)
                self.add(head.id, mention)
            else:
                self.walk(func.value, scope, tests, in_else)
        if name is not None:
            self.add(
                name,
                Mention(
                    self.relpath,
                    node.lineno,
                    scope,
                    "call",
                    None,
                    slot,
                    tests,
                    in_else,
                    bare=isinstance(func, ast.Name),
                ),
            )
        args = list(node.args)
        if isinstance(func, ast.Name) and func.id in _CHECKS and len(args) == 2:
            args = args[:1]  # the class checked against is not built
        for arg in [*args, *(k.value for k in node.keywords)]:
            self.walk(arg, scope, tests, in_else)


def module_mentions(relpath: str, module: ast.Module) -> dict[str, list[Mention]]:
    """Every mention in one parsed file, by the identifier named."""
    walker = _Walker(relpath)
    for stmt in module.body:
        walker.walk(stmt, "", (), False)
    return walker.out


_ID = re.compile(r"[A-Za-z_]\w*")


class MentionIndex:
    """Mentions across a set of files, each file walked only once a name it holds is asked."""

    def __init__(
        self,
        relpaths: Iterable[str],
        text: Callable[[str], str],
        module: Callable[[str], ast.Module | None],
    ) -> None:
        self._relpaths = list(relpaths)
        self._text = text
        self._module = module
        self._files: dict[str, list[str]] | None = None
        self._walked: dict[str, dict[str, list[Mention]] | None] = {}

    def files(self, name: str) -> list[str]:
        """The files whose text holds the identifier ``name`` (comments included)."""
        if self._files is None:
            self._files = {}
            for relpath in self._relpaths:
                for ident in set(_ID.findall(self._text(relpath))):
                    self._files.setdefault(ident, []).append(relpath)
        return self._files.get(name, [])

    def file(self, relpath: str) -> dict[str, list[Mention]] | None:
        """Every mention in one file (None: it does not parse)."""
        if relpath not in self._walked:
            module = self._module(relpath)
            self._walked[relpath] = module_mentions(relpath, module) if module else None
        return self._walked[relpath]

    def of(self, name: str) -> list[Mention] | None:
        """Mentions of ``name`` and of what it is imported as (None: a file does not parse)."""
        found: list[Mention] = []
        for relpath in self.files(name):
            mentions = self.file(relpath)
            if mentions is None:
                return None
            found += _aliased(mentions, name)
        return found


def _aliased(mentions: dict[str, list[Mention]], name: str) -> list[Mention]:
    """One file's mentions of ``name`` and of every name it is imported as there."""
    found = list(mentions.get(name, []))
    for m in mentions.get(name, []):
        if m.kind == "alias" and m.member:
            found += [a for a in mentions.get(m.member, []) if a.kind != "alias"]
    return [m for m in found if m.kind != "alias"]


def plugin_mentions(corpus: PluginCorpus) -> MentionIndex:
    """The plugin's files as a :class:`MentionIndex` (one per corpus)."""
    memo = corpus.__dict__.setdefault("_mention_index", [])
    if not memo:
        memo.append(MentionIndex(corpus.parsed_relpaths(), corpus.source_text, corpus.module))
    return memo[0]


def tree_mentions(index: CodeIndex) -> MentionIndex:
    """The upstream tree's files as a :class:`MentionIndex` (one per index)."""
    memo = index.__dict__.setdefault("_mention_index", [])
    if not memo:
        files = index.tree.iter_py_files()
        memo.append(MentionIndex(files, index.text, lambda p: parse_text(index.text(p))))
    return memo[0]
