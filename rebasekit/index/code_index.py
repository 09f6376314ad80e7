"""Name resolution over an upstream tree, parsing each module once and only on demand.

Resolution follows what ``import`` would do, statically: a module's own definitions,
then names it imports (``from x import y as z``, ``import a.b as c``), submodules of a
package, lazy export tables served by a module ``__getattr__`` (vLLM's ``MODULE_ATTRS``),
and star imports (honouring ``__all__``). Names a module could still produce at run time
(a ``__getattr__`` without a table, a class with an out-of-tree base) resolve to
:attr:`Status.DYNAMIC` so checks never report them as missing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from rebasekit.dedent import dedent
from rebasekit.degradation import Degradation
from rebasekit.index.cache import FactsCache, facts_key, tree_memo
from rebasekit.index.models import DefFact, ImportFact, ModuleFacts
from rebasekit.index.symbols import Resolution, Status, Symbol
from rebasekit.index.visitor import parse_module
from rebasekit.paths import index_dir
from rebasekit.sourcefile import SkippedFile
from rebasekit.upstream.tree import UpstreamTree

_MAX_DEPTH = 40
_DEFAULT = object()


class CodeIndex:
    """Lazy index of one :class:`UpstreamTree`; ``cache=None`` uses the default disk cache."""

    def __init__(self, tree: UpstreamTree, cache: FactsCache | None | object = _DEFAULT) -> None:
        self.tree = tree
        self.cache: FactsCache = (
            FactsCache(index_dir()) if cache is _DEFAULT else (cache or FactsCache(None))
        )  # type: ignore[assignment]
        self._modules: dict[str, ModuleFacts | None] = {}
        self._texts: dict[str, str] = {}
        self._lines: dict[str, list[str]] = {}
        self._name_table: dict[str, list[str]] | None = None
        self.parsed = 0  # modules parsed (cache misses), for benchmarks
        self._own_degradations: list[Degradation] = []
        self._building: set[str] = set()  # classes whose bases are being resolved
        # Outermost lookups and MROs, which depend on the tree alone (the checks ask for
        # the same few thousand names again and again); the inner ones, made while a
        # class's bases are being resolved, see that class as cyclic and are not kept.
        self._lookups: dict[str, Resolution] = {}
        self._mros: dict[tuple[str, tuple[str, ...]], list[Symbol]] = {}

    @property
    def degradations(self) -> list[Degradation]:
        """What this index could not read: the tree's skipped files and its own (no repeats)."""
        return list(
            dict.fromkeys([*getattr(self.tree, "degradations", []), *self._own_degradations])
        )

    # -- modules -------------------------------------------------------------------
    def module(self, modname: str) -> ModuleFacts | None:
        """Facts for ``modname``, or None if the tree has no such module."""
        if modname in self._modules:
            return self._modules[modname]
        relpath = self.tree.module_to_path(modname)
        facts = None
        if relpath is not None:
            try:
                content = self.tree.read_bytes(relpath)
            except SkippedFile as skipped:
                # present but unreadable: its names are unknowable, never reported missing
                self._own_degradations.append(skipped.degradation(f"{self.tree.label}: {relpath}"))
                facts = ModuleFacts(
                    modname,
                    relpath,
                    relpath.endswith("__init__.py"),
                    syntax_error=f"skipped: {skipped.reason}",
                )
                self._modules[modname] = facts
                return facts
            key = facts_key(relpath, content)
            facts = self.cache.get(key)
            if facts is None:
                facts = parse_module(content, modname, relpath, relpath.endswith("__init__.py"))
                self.parsed += 1
                self.cache.put(key, facts)
        self._modules[modname] = facts
        return facts

    def text(self, relpath: str) -> str:
        if relpath not in self._texts:
            self._texts[relpath] = self.tree.read_text(relpath)
        return self._texts[relpath]

    def lines(self, relpath: str) -> list[str]:
        """The file's text split once, line ends kept (every symbol's source is a slice)."""
        if relpath not in self._lines:
            self._lines[relpath] = self.text(relpath).splitlines(keepends=True)
        return self._lines[relpath]

    # -- resolution ----------------------------------------------------------------
    def resolve(self, dotted: str) -> Symbol | None:
        """The canonical definition ``dotted`` names, after following re-exports."""
        res = self.lookup(dotted)
        return res.symbol if res.found else None

    def lookup(self, dotted: str) -> Resolution:
        """Resolve ``dotted`` and say how far it got (see :class:`Status`)."""
        if self._building:
            return self._lookup(dotted, 0)
        res = self._lookups.get(dotted)
        if res is None:
            res = self._lookups[dotted] = self._lookup(dotted, 0)
        return res

    def _lookup(self, dotted: str, depth: int) -> Resolution:
        parts = [p for p in dotted.split(".") if p]
        if not parts or self.module(parts[0]) is None:
            return Resolution(Status.MODULE_MISSING, missing=parts[0] if parts else dotted)
        current = self._module_symbol(parts[0])
        for attr in parts[1:]:
            res = self._attr(current, attr, depth)
            if not res.found:
                return res
            assert res.symbol is not None
            current = res.symbol
        return Resolution(Status.FOUND, current)

    def _module_symbol(self, modname: str) -> Symbol:
        facts = self.module(modname)
        assert facts is not None
        return Symbol("module", modname, facts.relpath, 1, None, index=self)

    def _attr(self, container: Symbol, attr: str, depth: int) -> Resolution:
        if depth > _MAX_DEPTH:
            return Resolution(Status.DYNAMIC, container=container, missing=attr)
        if container.kind == "module":
            return self._module_attr(container, attr, depth)
        if container.kind == "class":
            member = self.lookup_member(container, attr)
            if member is not None:
                return Resolution(Status.FOUND, member)
            status = Status.DYNAMIC if self._has_external_base(container) else Status.MISSING
            return Resolution(status, container=container, missing=attr)
        return Resolution(Status.DYNAMIC, container=container, missing=attr)

    def _module_attr(self, container: Symbol, attr: str, depth: int) -> Resolution:
        modname = container.qualname
        facts = self.module(modname)
        assert facts is not None
        binding = facts.binding(attr)
        if isinstance(binding, DefFact):
            return Resolution(Status.FOUND, self._def_symbol(facts, binding))
        if isinstance(binding, ImportFact):
            res = self._follow_import(binding, depth)
            if res.status is not Status.MODULE_MISSING and res.status is not Status.MISSING:
                return res
            # an unresolvable import (e.g. of an optional dependency) binds an out-of-tree name
            if (
                not binding.target.startswith(self.tree.package + ".")
                and binding.target != self.tree.package
            ):
                return Resolution(Status.DYNAMIC, container=container, missing=attr)
            return Resolution(Status.MISSING, container=container, missing=attr)
        sub = f"{modname}.{attr}"
        if facts.is_package and self.module(sub) is not None:
            return Resolution(Status.FOUND, self._module_symbol(sub))
        if attr in facts.lazy_exports:
            mod, _, name = facts.lazy_exports[attr].partition(":")
            return self._lookup(f"{mod}.{name}", depth + 1)
        for star in reversed(facts.star_imports):
            star_facts = self.module(star)
            if star_facts is None:
                continue
            exported = (
                star_facts.all_names
                if star_facts.all_names is not None
                else star_facts.public_names()
            )
            if attr in exported or (star_facts.all_is_dynamic and not attr.startswith("_")):
                res = self._lookup(f"{star}.{attr}", depth + 1)
                if res.found or attr in exported:
                    return res
        if facts.has_getattr and facts.lazy_exports and not facts.syntax_error:
            # a module __getattr__ serving an export table raises for names outside it
            return Resolution(Status.MISSING, container=container, missing=attr)
        if facts.has_getattr or facts.syntax_error:
            return Resolution(Status.DYNAMIC, container=container, missing=attr)
        return Resolution(Status.MISSING, container=container, missing=attr)

    def _follow_import(self, imp: ImportFact, depth: int) -> Resolution:
        if imp.name is None:
            target = imp.target
            if self.module(target) is None:
                return Resolution(Status.MODULE_MISSING, missing=target)
            return Resolution(Status.FOUND, self._module_symbol(target))
        return self._lookup(imp.target, depth + 1)

    def _def_symbol(self, facts: ModuleFacts, fact: DefFact, owner: str | None = None) -> Symbol:
        qualname = f"{owner or facts.modname}.{fact.name}"
        sym = Symbol(
            fact.kind,
            qualname,
            facts.relpath,
            fact.lineno,
            fact.end_lineno,
            fact,
            guard=fact.guard,
            index=self,
        )
        if fact.kind == "class":
            if qualname in self._building:
                # a base chain that comes back to this class (cyclic re-exports, a class
                # deriving from its own name): its bases are unknowable, never missing
                sym.external_bases = tuple(fact.bases)
                return sym
            self._building.add(qualname)
            try:
                self._resolve_bases(sym, facts, fact, owner)
            finally:
                self._building.discard(qualname)
        return sym

    def _resolve_bases(
        self, sym: Symbol, facts: ModuleFacts, fact: DefFact, owner: str | None
    ) -> None:
        resolved, external = [], []
        for base in fact.bases:
            if base in ("object", "Generic", "Protocol", "ABC") or base.startswith(
                ("typing.", "abc.")
            ):
                continue
            res = self._base_lookup(facts, fact, base, owner)
            if res.found and res.symbol is not None and res.symbol.kind == "class":
                resolved.append(res.symbol.qualname)
            else:
                external.append(base)
        sym.bases = tuple(resolved)
        sym.external_bases = tuple(external)

    def _base_lookup(
        self, facts: ModuleFacts, fact: DefFact, base: str, owner: str | None
    ) -> Resolution:
        """Resolve a base expression as Python does: before the class statement binds its name.

        ``class LlamaDecoderLayer(LlamaDecoderLayer)`` derives from what the name meant
        just before the statement (usually an import), not from the class itself.
        """
        head, _, rest = base.partition(".")
        if owner is None and head == fact.name:
            earlier = [i for i in facts.imports if i.bound == head and i.lineno < fact.lineno]
            if not earlier:
                return Resolution(Status.DYNAMIC, missing=base)
            target = earlier[-1].target
            return self._lookup(f"{target}.{rest}" if rest else target, 1)
        return self._lookup(f"{facts.modname}.{base}", 1)

    # -- classes -------------------------------------------------------------------
    def mro(self, cls: Symbol) -> list[Symbol]:
        """Classes of ``cls``'s MRO that the tree defines (C3; depth-first if C3 fails)."""
        if self._building:
            return self._mro(cls, set())
        key = (cls.qualname, cls.bases)
        found = self._mros.get(key)
        if found is None:
            found = self._mros[key] = self._mro(cls, set())
        return [cls, *found[1:]]  # the caller's own symbol first (its external bases may differ)

    def _mro(self, cls: Symbol, active: set[str]) -> list[Symbol]:
        if cls.qualname in active:
            return [cls]
        active = active | {cls.qualname}
        seqs: list[list[Symbol]] = []
        for base in cls.bases:
            base_sym = self.resolve(base)
            if base_sym is not None and base_sym.kind == "class":
                seqs.append(self._mro(base_sym, active))
        bases = [self.resolve(b) for b in cls.bases]
        seqs.append([b for b in bases if b is not None and b.kind == "class"])
        return [cls, *_c3_merge(seqs)]

    def lookup_member(self, cls: Symbol, name: str) -> Symbol | None:
        """``name`` looked up along ``cls``'s MRO, as attribute access would find it."""
        for klass in self.mro(cls):
            fact = klass.members.get(name)
            if fact is not None:
                facts = self.module(klass.module)
                assert facts is not None
                return self._def_symbol(facts, fact, owner=klass.qualname)
        return None

    def _has_external_base(self, cls: Symbol) -> bool:
        return any(k.external_bases for k in self.mro(cls))

    # -- searching -----------------------------------------------------------------
    def find_definitions(
        self, name: str, kinds: Iterable[str] = ("class", "function", "variable")
    ) -> list[Symbol]:
        """Module-level definitions called ``name`` anywhere in the tree (for "moved" hints)."""
        wanted = set(kinds)
        found: list[Symbol] = []
        for relpath in self._names().get(name, []):
            modname = self.tree.path_to_module(relpath)
            facts = self.module(modname)
            if facts is None:
                continue
            fact = facts.defs.get(name)
            if fact is not None and fact.kind in wanted:
                found.append(self._def_symbol(facts, fact))
        return found

    def _names(self) -> dict[str, list[str]]:
        """Top-level names defined per file (see :func:`name_table`), once per index."""
        if self._name_table is None:
            self._name_table = name_table(self)
        return self._name_table

    def module_names(self) -> list[str]:
        return [self.tree.path_to_module(p) for p in self.tree.iter_py_files()]

    # -- shapes --------------------------------------------------------------------
    def body_shape(self, sym: Symbol) -> str | None:
        """A name-independent fingerprint of a definition's body (for rename detection)."""
        if sym.kind not in ("class", "function"):
            return None
        try:
            node = ast.parse(_dedent(sym.source)).body[0]
        except (SyntaxError, IndexError):
            return None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node.name = "_"
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(getattr(body[0], "value", None), ast.Constant)
            ):
                node.body = body[1:] or body
        return ast.dump(node, annotate_fields=False, include_attributes=False)


_TOP_LEVEL_NAME = re.compile(
    rb"^(?:async\s+def|def|class)\s+(\w+)|^(\w+)\s*(?::[^=\n]*)?=(?!=)", re.M
)


@tree_memo
def name_table(index: CodeIndex) -> dict[str, list[str]]:
    """Name -> files defining it at top level, from a cheap regex pre-scan of every file.

    Used to find where a missing name went; reading the whole tree is the expensive part,
    so the table is cached on disk per tree fingerprint.
    """
    table: dict[str, list[str]] = {}
    for relpath in index.tree.iter_py_files():
        content = index.tree.read_bytes(relpath)
        for name in {
            (m.group(1) or m.group(2)).decode() for m in _TOP_LEVEL_NAME.finditer(content)
        }:
            table.setdefault(name, []).append(relpath)
    return table


def _dedent(text: str) -> str:
    text = dedent(text)
    lines = text.splitlines()
    # decorators and the def line start the snippet; continuation lines are already inside
    return "\n".join(lines) + "\n"


def _c3_merge(seqs: list[list[Symbol]]) -> list[Symbol]:
    seqs = [list(s) for s in seqs if s]
    out: list[Symbol] = []
    while seqs:
        for seq in seqs:
            head = seq[0]
            if not any(head.qualname in [s.qualname for s in other[1:]] for other in seqs):
                break
        else:  # inconsistent hierarchy: fall back to depth-first order
            for seq in seqs:
                for sym in seq:
                    if sym.qualname not in [o.qualname for o in out]:
                        out.append(sym)
            return out
        out.append(head)
        seqs = [[s for s in seq if s.qualname != head.qualname] for seq in seqs]
        seqs = [s for s in seqs if s]
    return out
