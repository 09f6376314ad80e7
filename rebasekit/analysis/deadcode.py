"""Upstream code that never runs once the plugin is loaded, followed a few callers up.

An upstream call site matters only if its function can run. It cannot when the plugin
replaces the function, when every caller (by name, anywhere in the tree) sits in code
that cannot run either, or when the function is a method of a class nobody builds: the
only instances are plugin subclasses that override the method (without ``super()``), or
upstream builds the class only from a dotted string it stores in a setting the plugin
sets to its own class (``config.worker_cls = "pkg.Worker"``), or only into ``self.slot``
of a class whose every live instance is a plugin subclass that sets ``self.slot`` again
after ``super().__init__()``. Anything unknown counts as running: no caller found, a
module-level mention, a dunder, a mention in the plugin, more than a few callers, or a
chain longer than :data:`DEPTH`.
"""

from __future__ import annotations

import ast

from rebasekit.analysis.mentions import Mention, module_mentions, plugin_mentions, tree_mentions
from rebasekit.analysis.pluginclasses import expand, import_map
from rebasekit.astutil import FuncNode, dotted, parse_text, walk
from rebasekit.corpus.models import PluginCorpus
from rebasekit.dedent import dedent
from rebasekit.index import CodeIndex, Symbol

DEPTH = 5  # caller steps followed at most
_FANOUT = 8  # mentions of one name judged at most; more counts as running
_BUDGET = 400  # names judged per question at most
_BUILDING_MEMBERS = ("__new__", "__init__", "__call__", "__class__")
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _short(qualname: str) -> str:
    return ".".join(qualname.split(".")[-2:])


class _Reader:
    """Answers for one tree and one plugin; memoised, with a step budget per question."""

    def __init__(self, index: CodeIndex, corpus: PluginCorpus, replaced: set[str]) -> None:
        self.index = index
        self.corpus = corpus
        self.replaced = replaced
        self.budget = _BUDGET

    # -- mentions ------------------------------------------------------------------
    def upstream(self, name: str) -> list[Mention] | None:
        """Upstream mentions of ``name`` (None: a file naming it does not parse)."""
        return tree_mentions(self.index).of(name)

    def plugin(self, name: str) -> list[Mention]:
        """Plugin mentions of ``name`` (a file that does not parse is no corpus file)."""
        return plugin_mentions(self.corpus).of(name) or []

    def plugin_sets(self, slot: str) -> bool:
        """The plugin assigns a dotted string to ``.slot`` (``cfg.worker_cls = "a.B"``)."""
        return any(
            m.kind == "string" and m.slot == slot and m.dotted
            for relpath in plugin_mentions(self.corpus).files(slot)
            for found in (plugin_mentions(self.corpus).file(relpath) or {}).values()
            for m in found
        )

    def plugin_class(self, mention: Mention) -> ast.ClassDef | None:
        module = self.corpus.module(mention.relpath)
        body = module.body if module is not None else []
        node: ast.AST | None = None
        for part in mention.scope.split("."):
            node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
            if node is None:
                return None
            body = node.body
        return node if isinstance(node, ast.ClassDef) else None

    # -- scopes --------------------------------------------------------------------
    def scope_function(self, relpath: str, scope: str) -> Symbol | None:
        """The outermost function (module-level or a class member) enclosing ``scope``."""
        parts = scope.split(".") if scope else []
        mod = self.index.tree.path_to_module(relpath)
        for end in range(1, len(parts) + 1):
            sym = self.index.resolve(f"{mod}.{'.'.join(parts[:end])}")
            if sym is None:
                return None
            if sym.kind == "function":
                return sym
            if sym.kind != "class":
                return None
        return None

    def scope_dead(self, relpath: str, scope: str, depth: int) -> str | None:
        sym = self.scope_function(relpath, scope)
        return self.function_dead(sym, depth) if sym is not None else None

    # -- functions -----------------------------------------------------------------
    def function_dead(self, sym: Symbol, depth: int) -> str | None:
        """Why ``sym`` never runs, or None when it may."""
        self.budget -= 1
        if self.budget < 0:
            return None
        if sym.qualname in self.replaced:
            return f"{_short(sym.qualname)} is replaced by the plugin"
        owner_name = sym.qualname.rsplit(".", 1)[0]
        owner = self.index.resolve(owner_name)
        if (
            owner is not None
            and owner.kind == "class"
            and not sym.is_staticmethod
            and not sym.is_classmethod
        ):
            why = self.instances_dead(owner, sym.name, depth)
            if why is not None:
                return why
        if depth <= 0 or sym.name.startswith("__"):
            return None
        if self.plugin(sym.name):
            return None  # the plugin may call it itself
        found = self.upstream(sym.name)
        if not found:
            return None
        outside = [
            m
            for m in found
            if m.kind != "base"
            and not _within(f"{self.index.tree.path_to_module(m.relpath)}.{m.scope}", sym.qualname)
        ]
        if not outside or len(outside) > _FANOUT:
            return None
        callers: list[str] = []
        reasons: list[str] = []
        for m in outside:
            caller = self.scope_function(m.relpath, m.scope)
            if caller is None:
                return None  # module level or a class body: runs on import
            why = self.function_dead(caller, depth - 1)
            if why is None:
                return None
            callers.append(_short(caller.qualname))
            reasons.append(why)
        names = ", ".join(sorted(set(callers)))
        return f"{_short(sym.qualname)} is called only from {names}; " + "; ".join(
            dict.fromkeys(reasons)
        )

    # -- classes -------------------------------------------------------------------
    def _subclasses(
        self, cls: Symbol
    ) -> tuple[list[Symbol], list[tuple[Mention, ast.ClassDef]]] | None:
        """Direct subclasses upstream and in the plugin (None: one cannot be placed)."""
        ups: list[Symbol] = []
        plugs: list[tuple[Mention, ast.ClassDef]] = []
        found = self.upstream(cls.name)
        if found is None:
            return None
        for m in found:
            if m.kind != "base":
                continue
            sub = self.index.resolve(f"{self.index.tree.path_to_module(m.relpath)}.{m.scope}")
            if sub is None or sub.kind != "class":
                return None
            if cls.qualname in (k.qualname for k in self.index.mro(sub)[1:]):
                ups.append(sub)
        for m in self.plugin(cls.name):
            if m.kind != "base":
                continue
            node = self.plugin_class(m)
            if node is None:
                return None
            if self._plugin_derives(m.relpath, node, cls):
                plugs.append((m, node))
        return ups, plugs

    def _plugin_derives(self, relpath: str, node: ast.ClassDef, cls: Symbol) -> bool:
        """A base of the plugin class is ``cls`` (or cannot be placed: counted as it)."""
        names = import_map(self.corpus, relpath)
        for base in node.bases:
            full = expand(names, dotted(base))
            sym = self.index.resolve(full) if full else None
            if sym is None or sym.kind != "class":
                if (dotted(base) or "").rsplit(".", 1)[-1] == cls.name:
                    return True
                continue
            if cls.qualname in (k.qualname for k in self.index.mro(sym)):
                return True
        return False

    def instances_dead(self, cls: Symbol, method: str, depth: int) -> str | None:
        """Why ``cls.method`` never runs on an instance, or None when it may."""
        if depth <= 0:
            return None
        classes = [cls]
        overriding: list[str] = []
        todo = [cls]
        while todo:
            klass = todo.pop()
            subs = self._subclasses(klass)
            if subs is None:
                return None
            ups, plugs = subs
            for _, node in plugs:
                if not _overrides(node, method):
                    return None  # a plugin subclass runs the upstream method
                overriding.append(node.name)
            for sub in ups:
                member = self.index.lookup_member(sub, method)
                if (
                    member is not None
                    and member.qualname.rsplit(".", 1)[0] != cls.qualname
                    and _source_overrides(member, method)
                ):
                    continue  # overrides it: its instances run their own
                if sub.qualname not in (c.qualname for c in classes):
                    classes.append(sub)
                    todo.append(sub)
            if len(classes) > _FANOUT:
                return None
        reasons: list[str] = []
        for klass in classes:
            named = [*(self.upstream(klass.name) or []), *self.plugin(klass.name)]
            if any(m.member == method and not self._other(klass, m) for m in named):
                return None  # ``Cls.method(obj, ...)`` runs it on any object
            why = self.never_built(klass, depth - 1)
            if why is None:
                return None
            reasons.append(why)
        text = "; ".join(dict.fromkeys(reasons))
        if overriding:
            names = ", ".join(sorted(set(overriding)))
            text += f"; the plugin's subclasses ({names}) override {method}"
        return text

    def never_built(self, cls: Symbol, depth: int) -> str | None:
        """Why no instance of exactly ``cls`` is ever built, or None when one may be."""
        self.budget -= 1
        if self.budget < 0 or depth < 0:
            return None
        for m in self.plugin(cls.name):
            if m.kind == "base" or self._harmless_member(cls, m):
                continue
            return None  # the plugin may build it
        found = self.upstream(cls.name)
        if found is None:
            return None
        reasons: list[str] = []
        for m in found:
            if m.kind == "base" or self._harmless_member(cls, m) or self._other(cls, m):
                continue
            if m.kind == "string" and m.slot is not None and self.plugin_sets(m.slot):
                reasons.append(
                    f"upstream builds {cls.name} only from the name it stores in "
                    f"`.{m.slot}`, which the plugin sets to its own class"
                )
                continue
            if m.kind == "call" and m.slot is not None:
                why = self.slot_overwritten(m, cls, depth)
                if why is not None:
                    reasons.append(why)
                    continue
            why = self.scope_dead(m.relpath, m.scope, depth)
            if why is None:
                return None
            reasons.append(why)
        if not reasons:
            return None  # never named at all: built some way the scan cannot see
        return f"{cls.name} is never built: " + "; ".join(dict.fromkeys(reasons))

    def _other(self, sym: Symbol, m: Mention) -> bool:
        """A plain name that the mentioning module binds to another definition."""
        if not m.bare:
            return False
        other = self.index.resolve(f"{self.index.tree.path_to_module(m.relpath)}.{sym.name}")
        return other is not None and other.qualname != sym.qualname

    def _harmless_member(self, cls: Symbol, m: Mention) -> bool:
        """``Cls.member`` reading a plain function, staticmethod or constant builds nothing.

        Nor does a string that is no dotted path: a class is built by name from one.
        """
        if m.kind == "string":
            return not m.dotted
        if m.kind != "ref" or m.member is None or m.member in _BUILDING_MEMBERS:
            return False
        member = self.index.lookup_member(cls, m.member)
        return member is not None and not member.is_classmethod

    def slot_overwritten(self, m: Mention, cls: Symbol, depth: int) -> str | None:
        """``self.slot = Cls(...)`` in ``K.__init__`` that every live ``K`` sets again."""
        parts = m.scope.split(".")
        if len(parts) < 2 or parts[-1] != "__init__" or m.in_else or m.slot is None:
            return None
        owner = self.index.resolve(
            f"{self.index.tree.path_to_module(m.relpath)}.{'.'.join(parts[:-1])}"
        )
        if owner is None or owner.kind != "class":
            return None
        classes = [owner]
        resetting: list[str] = []
        todo = [owner]
        while todo:
            subs = self._subclasses(todo.pop())
            if subs is None:
                return None
            ups, plugs = subs
            for _, node in plugs:
                if not _resets_slot(node, m.slot, set(m.tests)):
                    return None
                resetting.append(node.name)
            for sub in ups:
                if sub.qualname not in (c.qualname for c in classes):
                    classes.append(sub)
                    todo.append(sub)
            if len(classes) > _FANOUT:
                return None
        if not resetting:
            return None
        for klass in classes:
            if self.never_built(klass, depth - 1) is None:
                return None
        names = ", ".join(sorted(set(resetting)))
        return (
            f"the {cls.name} that {owner.name}.__init__ stores in self.{m.slot} is replaced "
            f"right after super().__init__() by every plugin subclass that builds one ({names}), "
            f"and {owner.name} itself is never built"
        )


def _within(scope: str, qualname: str) -> bool:
    return scope == qualname or scope.startswith(f"{qualname}.")


def _source_overrides(member: Symbol, method: str) -> bool:
    """An upstream override that never reaches the base's ``method`` (unreadable: it may)."""
    module = parse_text(dedent(member.source))
    func = module.body[0] if module is not None and module.body else None
    return isinstance(func, _FUNCS) and _never_calls_base(func, method)


def _overrides(node: ast.ClassDef, method: str) -> bool:
    """The class body defines ``method`` and the definition never calls ``super().method``."""
    func = next((n for n in node.body if isinstance(n, _FUNCS) and n.name == method), None)
    return func is not None and _never_calls_base(func, method)


def _never_calls_base(func: FuncNode, method: str) -> bool:
    for sub in walk(func):
        if isinstance(sub, ast.Attribute) and sub.attr == method:
            if not (isinstance(sub.value, ast.Name) and sub.value.id == "self"):
                return False  # super().m, Base.m(self): the upstream method runs too
    return True


def _slot_sets(func: FuncNode) -> dict[str, list[Mention]]:
    return module_mentions("", ast.Module(body=func.body, type_ignores=[]))


def _resets_slot(node: ast.ClassDef, slot: str, upstream_tests: set[str]) -> bool:
    """``__init__`` assigns ``self.slot`` after ``super().__init__()``, never more guarded.

    The assignment may sit in a method of the same class that ``__init__`` calls on
    ``self`` (after ``super().__init__()``): the guards of both count.
    """
    methods = {n.name: n for n in node.body if isinstance(n, _FUNCS)}
    init = methods.get("__init__")
    if init is None:
        return False
    supers = [
        c.lineno
        for c in walk(init)
        if isinstance(c, ast.Call)
        and isinstance(c.func, ast.Attribute)
        and c.func.attr == "__init__"
        and isinstance(c.func.value, ast.Call)
        and isinstance(c.func.value.func, ast.Name)
        and c.func.value.func.id == "super"
    ]
    if len(supers) != 1:
        return False
    for found in _slot_sets(init).values():
        for m in found:
            if m.line <= supers[0] or m.in_else or m.kind != "call":
                continue
            if m.slot == slot and set(m.tests) <= upstream_tests:
                return True
    for name, helper in methods.items():
        calls = [
            m
            for m in _slot_sets(init).get(name, [])
            if m.kind == "call" and m.line > supers[0] and not m.in_else
        ]
        for call in calls:
            for found in _slot_sets(helper).values():
                for m in found:
                    if m.kind != "call" or m.slot != slot or m.in_else:
                        continue
                    if set(call.tests) | set(m.tests) <= upstream_tests:
                        return True
    return False


def never_runs(
    index: CodeIndex, corpus: PluginCorpus, relpath: str, scope: str, replaced: set[str]
) -> str | None:
    """Why the upstream code at ``scope`` of ``relpath`` never runs, or None when it may.

    ``replaced``: dotted upstream names of the functions and methods the plugin replaces.
    """
    memo: dict = index.__dict__.setdefault("_never_runs", {})
    key = (id(corpus), relpath, scope)
    if key not in memo:
        reader: _Reader = index.__dict__.setdefault("_dead_readers", {}).setdefault(
            id(corpus), _Reader(index, corpus, replaced)
        )
        reader.budget = _BUDGET
        memo[key] = reader.scope_dead(relpath, scope, DEPTH)
    return memo[key]
