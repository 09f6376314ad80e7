"""Turn one module's source into :class:`ModuleFacts` with the stdlib ``ast`` parser.

Only module scope and class bodies are visited (plus ``self.X`` stores inside methods):
function bodies are skipped, which keeps a cold parse of a 6000-line module cheap.
Blocks under ``if TYPE_CHECKING:`` and ``try: ... except ImportError`` are walked too
and their bindings tagged with a ``guard`` so checks can treat them as softer.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from rebasekit.astutil import parse_shared
from rebasekit.index.models import DefFact, ImportFact, ModuleFacts, Param, ParamKind, Signature

_LAZY_VALUE = re.compile(r"^(\.*[\w.]*):(\w+)$")
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def parse_module(source: str | bytes, modname: str, relpath: str, is_package: bool) -> ModuleFacts:
    """Parse ``source`` and collect its facts; a syntax error yields facts with no bindings."""
    facts = ModuleFacts(modname=modname, relpath=relpath, is_package=is_package)
    try:
        tree = parse_shared(source, filename=relpath)
    except (SyntaxError, ValueError) as exc:
        facts.syntax_error = f"{type(exc).__name__}: {exc}"
        return facts
    _ModuleVisitor(facts).visit_block(tree.body, guard=None)
    return facts


def absolute_module(modname: str, is_package: bool, level: int, module: str | None) -> str:
    """Resolve a relative ``from ... import`` the way the import system does."""
    if level == 0:
        return module or ""
    base = modname.split(".") if is_package else modname.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def is_type_checking_test(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    if isinstance(test, ast.Attribute):
        return test.attr == "TYPE_CHECKING"
    return False


def guards_import_errors(node: ast.Try) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        for t in types:
            name = t.id if isinstance(t, ast.Name) else getattr(t, "attr", "")
            if name in _IMPORT_ERRORS:
                return True
    return False


def signature_of(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> Signature:
    """Build a :class:`Signature` from a function node (defaults and annotations as text)."""
    args = node.args
    params: list[Param] = []
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(
        args.defaults
    )
    for i, arg in enumerate(positional):
        kind = (
            ParamKind.POSITIONAL_ONLY
            if i < len(args.posonlyargs)
            else ParamKind.POSITIONAL_OR_KEYWORD
        )
        params.append(Param(arg.arg, kind, _text(defaults[i]), _text(arg.annotation)))
    if args.vararg:
        params.append(
            Param(args.vararg.arg, ParamKind.VAR_POSITIONAL, None, _text(args.vararg.annotation))
        )
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        params.append(Param(arg.arg, ParamKind.KEYWORD_ONLY, _text(default), _text(arg.annotation)))
    if args.kwarg:
        params.append(
            Param(args.kwarg.arg, ParamKind.VAR_KEYWORD, None, _text(args.kwarg.annotation))
        )
    returns = _text(getattr(node, "returns", None))
    return Signature(tuple(params), returns, isinstance(node, ast.AsyncFunctionDef))


def _text(node: ast.AST | None) -> str | None:
    return None if node is None else ast.unparse(node)


def base_expr(node: ast.expr) -> str:
    """A base-class expression as a dotted name (``Generic[T]`` -> ``Generic``)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return ast.unparse(node)


class _ModuleVisitor:
    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts

    def visit_block(self, body: list[ast.stmt], guard: str | None) -> None:
        for stmt in body:
            self.visit_stmt(stmt, guard)

    def visit_stmt(self, node: ast.stmt, guard: str | None) -> None:
        facts = self.facts
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    facts.imports.append(
                        ImportFact(alias.asname, alias.name, None, node.lineno, guard)
                    )
                else:
                    top = alias.name.split(".")[0]
                    facts.imports.append(
                        ImportFact(top, alias.name, None, node.lineno, guard, bound_is_top=True)
                    )
        elif isinstance(node, ast.ImportFrom):
            module = absolute_module(facts.modname, facts.is_package, node.level, node.module)
            for alias in node.names:
                bound = "*" if alias.name == "*" else (alias.asname or alias.name)
                name = None if alias.name == "*" else alias.name
                facts.imports.append(ImportFact(bound, module, name, node.lineno, guard))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == "__getattr__":
                facts.has_getattr = True
            self._add(facts.defs, function_fact(node, guard))
        elif isinstance(node, ast.ClassDef):
            self._add(facts.defs, class_fact(node, guard))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            self._assignment(node, guard)
        elif isinstance(node, ast.If):
            inner = "type_checking" if is_type_checking_test(node.test) else guard
            self.visit_block(node.body, inner)
            self.visit_block(node.orelse, guard)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            inner = "try" if guards_import_errors(node) else guard  # type: ignore[arg-type]
            self.visit_block(node.body, inner)
            for handler in node.handlers:  # type: ignore[attr-defined]
                self.visit_block(handler.body, inner)
            self.visit_block(node.orelse, inner)  # type: ignore[attr-defined]
            self.visit_block(node.finalbody, guard)  # type: ignore[attr-defined]
        elif isinstance(node, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)):
            self.visit_block(node.body, guard)

    @staticmethod
    def _add(defs: dict[str, DefFact], fact: DefFact) -> None:
        _keep_first(defs, fact)

    def _assignment(
        self, node: ast.Assign | ast.AnnAssign | ast.AugAssign, guard: str | None
    ) -> None:
        facts = self.facts
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        for target in targets:
            if not isinstance(target, ast.Name):
                if isinstance(target, ast.Tuple):
                    for elt in target.elts:
                        if isinstance(elt, ast.Name):
                            self._add(
                                facts.defs,
                                DefFact(
                                    elt.id,
                                    "variable",
                                    node.lineno,
                                    node.end_lineno or node.lineno,
                                    guard=guard,
                                ),
                            )
                continue
            name = target.id
            if name == "__all__" and value is not None:
                self._collect_all(value, extend=isinstance(node, ast.AugAssign))
                continue
            if isinstance(value, ast.Dict) and value is not None:
                self._collect_lazy(value)
            if not isinstance(node, ast.AugAssign):
                self._add(
                    facts.defs,
                    DefFact(
                        name, "variable", node.lineno, node.end_lineno or node.lineno, guard=guard
                    ),
                )

    def _collect_all(self, value: ast.expr, extend: bool) -> None:
        facts = self.facts
        names: list[str] = [] if not extend or facts.all_names is None else list(facts.all_names)
        elts = value.elts if isinstance(value, (ast.List, ast.Tuple, ast.Set)) else None
        if elts is None:
            facts.all_is_dynamic = True
            elts = []
        for elt in elts:
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                names.append(elt.value)
            else:
                facts.all_is_dynamic = True
        facts.all_names = names

    def _collect_lazy(self, value: ast.Dict) -> None:
        """``{"Name": ".sub.mod:Name"}`` or ``{"Name": ("pkg.mod", "Name")}`` export tables."""
        facts = self.facts
        found: dict[str, str] = {}
        for key, val in zip(value.keys, value.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return
            module = attr = None
            if isinstance(val, ast.Constant) and isinstance(val.value, str):
                match = _LAZY_VALUE.match(val.value)
                if match:
                    module, attr = match.group(1), match.group(2)
            elif (
                isinstance(val, ast.Tuple)
                and len(val.elts) == 2
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in val.elts)
            ):
                module, attr = val.elts[0].value, val.elts[1].value  # type: ignore[attr-defined]
            if module is None or attr is None:
                return
            level = len(module) - len(module.lstrip("."))
            found[key.value] = (
                absolute_module(facts.modname, facts.is_package, level, module.lstrip(".") or None)
                + ":"
                + attr
            )
        facts.lazy_exports.update(found)


def function_fact(
    node: ast.FunctionDef | ast.AsyncFunctionDef, guard: str | None = None
) -> DefFact:
    decorators = tuple(ast.unparse(d) for d in node.decorator_list)
    return DefFact(
        node.name,
        "function",
        node.lineno,
        node.end_lineno or node.lineno,
        signature=signature_of(node),
        decorators=decorators,
        guard=guard,
    )


def class_fact(node: ast.ClassDef, guard: str | None = None) -> DefFact:
    fact = DefFact(
        node.name,
        "class",
        node.lineno,
        node.end_lineno or node.lineno,
        decorators=tuple(ast.unparse(d) for d in node.decorator_list),
        bases=tuple(base_expr(b) for b in node.bases),
        guard=guard,
    )
    _class_body(node.body, fact)
    return fact


def _is_overload_stub(fact: DefFact) -> bool:
    return any(
        d in ("overload", "typing.overload", "typing_extensions.overload") for d in fact.decorators
    )


def _keep_first(defs: dict[str, DefFact], fact: DefFact) -> None:
    """The first definition of a name wins (if/else twins), except an ``@overload`` stub.

    Overload stubs only describe call forms; the undecorated definition after them is
    what Python binds the name to, so its signature is the one calls are checked against.
    """
    current = defs.get(fact.name)
    if current is None or (_is_overload_stub(current) and not _is_overload_stub(fact)):
        defs[fact.name] = fact
    elif _is_overload_stub(current) and _is_overload_stub(fact):
        # no implementation yet (a stub file, a protocol): what any overload accepts
        defs[fact.name] = replace(
            current, signature=overload_union(current.signature, fact.signature)
        )


_KIND_ORDER = [
    ParamKind.POSITIONAL_ONLY,
    ParamKind.POSITIONAL_OR_KEYWORD,
    ParamKind.VAR_POSITIONAL,
    ParamKind.KEYWORD_ONLY,
    ParamKind.VAR_KEYWORD,
]


def overload_union(a: Signature | None, b: Signature | None) -> Signature | None:
    """One signature accepting every call that either overload accepts.

    A parameter is required only when both overloads require it at the same kind; one
    that only some overloads take, or that they take in different ways, is optional and
    keyword-or-positional. The return annotations are joined with ``|``.
    """
    if a is None or b is None:
        return a or b
    names = list(dict.fromkeys([p.name for p in a.params] + [p.name for p in b.params]))
    merged: list[Param] = []
    for name in names:
        pa, pb = a.get(name), b.get(name)
        first = pa or pb
        assert first is not None
        if pa is not None and pb is not None and pa.kind is pb.kind:
            kind = pa.kind
            default = pa.default if pa.default is not None else pb.default
        else:
            kind = first.kind
            if kind not in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD):
                kind = ParamKind.POSITIONAL_OR_KEYWORD if pa and pb else first.kind
            default = first.default if first.default is not None else "..."
        if kind in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD):
            default = None
        merged.append(Param(name, kind, default, first.annotation))
    merged.sort(key=lambda p: _KIND_ORDER.index(p.kind))
    varargs = [p for p in merged if p.kind is ParamKind.VAR_POSITIONAL][:1]
    varkw = [p for p in merged if p.kind is ParamKind.VAR_KEYWORD][:1]
    fixed = [p for p in merged if p.kind not in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD)]
    positional = [p for p in fixed if p.kind is not ParamKind.KEYWORD_ONLY]
    seen_default = False
    for i, param in enumerate(positional):  # no required positional after an optional one
        seen_default = seen_default or param.default is not None
        if seen_default and param.default is None:
            positional[i] = replace(param, default="...")
    keyword = [p for p in fixed if p.kind is ParamKind.KEYWORD_ONLY]
    returns = " | ".join(dict.fromkeys(r for r in (a.returns, b.returns) if r)) or None
    return Signature(tuple(positional + varargs + keyword + varkw), returns, a.is_async)


def _class_body(body: list[ast.stmt], fact: DefFact) -> None:
    members = fact.members
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            member = function_fact(stmt)
            if stmt.name in members and any(
                d.endswith((".setter", ".deleter")) for d in member.decorators
            ):
                continue  # keep the getter as the property's definition
            _keep_first(members, member)
            _instance_attrs(stmt, fact.instance_attrs)
        elif isinstance(stmt, ast.ClassDef):
            members.setdefault(stmt.name, class_fact(stmt))
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    members.setdefault(
                        target.id,
                        DefFact(target.id, "variable", stmt.lineno, stmt.end_lineno or stmt.lineno),
                    )
        elif isinstance(stmt, ast.If):
            _class_body(stmt.body, fact)
            _class_body(stmt.orelse, fact)
        elif isinstance(stmt, ast.Try):
            _class_body(stmt.body, fact)
            for handler in stmt.handlers:
                _class_body(handler.body, fact)


_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def _statements(func: ast.AST) -> list[ast.AST]:
    """The statements under ``func`` (nested ones too) in ``ast.walk``'s order.

    Only statements assign, and a statement's parent is a statement, an ``except``
    handler or a ``case``; walking just those, breadth first with children in field
    order, keeps the relative order of the full walk at a tenth of the nodes.
    """
    out: list[ast.AST] = [func]
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                out.extend([v for v in value if isinstance(v, _BLOCKS)])
    return out


def _instance_attrs(func: ast.FunctionDef | ast.AsyncFunctionDef, into: dict[str, int]) -> None:
    if not func.args.args:
        return
    self_name = func.args.args[0].arg
    for node in _statements(func):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == self_name
                ):
                    into.setdefault(t.attr, t.lineno)
