"""Upstream config fields: their defaults, the values finalisation gives them, their readers.

vLLM's configuration is a tree of dataclasses in the ``<package>.config`` package
(``VllmConfig.compilation_config: CompilationConfig`` ...). A field's effective value is
its dataclass default, unless a ``__post_init__`` assigns it (``self.field = ...`` in the
class itself, or ``self.sub_config.field = ...`` in a parent config). Only assignments
that give a default are read: unconditional ones, and those under ``if <field> is
None:`` (the user left it unset), of plain values (constants, enum members, dotted
names); values set under other conditions depend on the user's settings. When a
release changes the dataclass default or adds such a value, code that reads the
field, or branches on the enum the field holds, runs another path with the same user
settings, though no signature changed. A value that only disappears is not counted:
more often it moved to a helper than went away.

:func:`config_values` reads those facts from one tree; :func:`config_reads` finds where
plugin classes read a field (``x.compilation_config.cudagraph_mode``) or compare against
members of a field's enum type (``mode == CUDAGraphMode.FULL``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rebasekit.analysis.pluginclasses import PluginClass, expand, import_map, method_nodes
from rebasekit.astutil import dotted, parse_text, walk
from rebasekit.corpus.models import PluginCorpus
from rebasekit.datacodec import record
from rebasekit.index import CodeIndex
from rebasekit.index.cache import tree_memo
from rebasekit.index.models import ImportFact

_FINALISERS = ("__post_init__",)
_FIELD_CALLS = ("field", "Field", "dataclasses.field", "pydantic.Field")


@record
@dataclass(frozen=True)
class FieldValue:
    """What one config field starts as in one tree."""

    owner: str  # canonical qualname of the config class
    name: str
    default: str | None  # the dataclass default as written; None: required or not seen
    assigned: tuple[str, ...]  # values finalisation assigns, as written, sorted
    assigned_in: tuple[tuple[str, str], ...]  # (value, qualname of a finaliser assigning it)
    enum: str | None  # canonical qualname of the enum class in the annotation, if any
    holds: str | None = None  # the config class the field holds (a sub-config), if any


@dataclass(frozen=True)
class ConfigRead:
    """A plugin definition that depends on one config field's value."""

    relpath: str
    line: int
    owner: str  # the plugin class (or function) holding the read
    method: str | None  # the method of ``owner`` that reads, None at class level
    field: tuple[str, str]  # (config class qualname, field name)
    text: str  # the read as written


def _config_modules(index: CodeIndex, package: str) -> list[str]:
    root = f"{package}.config"
    return [m for m in index.module_names() if m == root or m.startswith(root + ".")]


def _default_of(value: ast.expr | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, ast.Call) and dotted(value.func) in _FIELD_CALLS:
        for kw in value.keywords:
            if kw.arg == "default":
                return ast.unparse(kw.value)
            if kw.arg == "default_factory":
                return f"{ast.unparse(kw.value)}()"
        return None
    return ast.unparse(value)


def _annotation_names(node: ast.expr) -> list[str]:
    """Dotted names an annotation mentions (string annotations parsed too)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        parsed = parse_text(node.value)
        if parsed is None or not parsed.body or not isinstance(parsed.body[0], ast.Expr):
            return []
        node = parsed.body[0].value
    out: list[str] = []
    for sub in walk(node):
        if isinstance(sub, (ast.Name, ast.Attribute)):
            text = dotted(sub)
            if text:
                out.append(text)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            out.extend(_annotation_names(sub))
    return out


def resolve_class_in(index: CodeIndex, modname: str, name: str) -> str | None:
    """Canonical qualname of ``name`` as seen from module ``modname``."""
    facts = index.module(modname)
    if facts is None:
        return None
    head, _, rest = name.partition(".")
    bound = facts.binding(head)
    if bound is None:
        return None
    base = bound.target if isinstance(bound, ImportFact) else f"{modname}.{head}"
    sym = index.resolve(f"{base}.{rest}" if rest else base)
    return sym.qualname if sym is not None and sym.kind == "class" else None


def _is_enum(index: CodeIndex, qualname: str) -> bool:
    sym = index.resolve(qualname)
    if sym is None or sym.kind != "class":
        return False
    bases = [*sym.bases, *sym.external_bases]
    return any(b.rsplit(".", 1)[-1] in ("Enum", "IntEnum", "StrEnum", "Flag") for b in bases)


@tree_memo
def config_values(index: CodeIndex, package: str = "vllm") -> dict[str, FieldValue]:
    """``"Class:field"`` -> its default and finalised values, for every config dataclass."""
    classes: dict[str, tuple[str, ast.ClassDef]] = {}  # qualname -> (module, node)
    for modname in _config_modules(index, package):
        facts = index.module(modname)
        if facts is None or facts.syntax_error:
            continue
        module = parse_text(index.text(facts.relpath))
        if module is None:
            continue
        for stmt in module.body:
            if isinstance(stmt, ast.ClassDef):
                sym = index.resolve(f"{modname}.{stmt.name}")
                if sym is not None and sym.relpath == facts.relpath:
                    classes[sym.qualname] = (modname, stmt)
    fields: dict[str, dict[str, tuple[str | None, str | None, str | None]]] = {}
    for qual, (modname, node) in classes.items():
        own: dict[str, tuple[str | None, str | None, str | None]] = {}
        for stmt in node.body:
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            if dotted(stmt.annotation) in ("ClassVar", "typing.ClassVar"):
                continue
            sub = enum = None
            for name in _annotation_names(stmt.annotation):
                resolved = resolve_class_in(index, modname, name)
                if resolved is None:
                    continue
                if _is_enum(index, resolved):
                    enum = enum or resolved
                elif resolved in classes:
                    sub = resolved
            own[stmt.target.id] = (_default_of(stmt.value), sub, enum)
        if own:
            fields[qual] = own
    assigned: dict[str, set[str]] = {}
    where: dict[str, set[tuple[str, str]]] = {}
    for qual, (_, node) in classes.items():
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name in _FINALISERS:
                for key, value in _finaliser_assignments(qual, stmt, fields):
                    assigned.setdefault(key, set()).add(value)
                    where.setdefault(key, set()).add((value, f"{qual}.{stmt.name}"))
    out: dict[str, FieldValue] = {}
    for qual, own in fields.items():
        for name, (default, sub, enum) in own.items():
            key = f"{qual}:{name}"
            out[key] = FieldValue(
                qual,
                name,
                default,
                tuple(sorted(assigned.get(key, ()))),
                tuple(sorted(where.get(key, ()))),
                enum,
                sub if sub in fields else None,
            )
    return out


def _none_tests(test: ast.expr) -> set[str]:
    """Dotted names ``test`` requires to be None (``x.f is None``, also inside ``and``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return set().union(*(_none_tests(v) for v in test.values))
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        name = dotted(test.left)
        return {name} if name else set()
    return set()


def _plain_value(node: ast.expr, me: str) -> bool:
    """A value that is the same whatever the other settings: a constant or a dotted name."""
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.Constant):
        return True
    name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    return bool(name) and name.split(".")[0] != me


def _default_assignments(func: ast.FunctionDef) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) assignments of ``func`` that set a default, not a setting-dependent value.

    Unconditional ones count, and those under ``if <target> is None:`` (a field left
    unset gets its default there), at any depth of other conditions.
    """
    out: list[tuple[ast.expr, ast.expr]] = []

    def visit(body: list[ast.stmt], conditional: bool, unset: frozenset[str]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                visit(stmt.body, True, unset | _none_tests(stmt.test))
                visit(stmt.orelse, True, unset)
            elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                visit(stmt.body, True, unset)
                visit(stmt.orelse, True, unset)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                visit(stmt.body, conditional, unset)
            elif isinstance(stmt, ast.Try):
                visit(stmt.body, conditional, unset)
                for handler in stmt.handlers:
                    visit(handler.body, True, unset)
                visit(stmt.orelse, conditional, unset)
                visit(stmt.finalbody, conditional, unset)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    if not conditional or dotted(target) in unset:
                        out.append((target, stmt.value))

    visit(func.body, False, frozenset())
    return out


def _finaliser_assignments(
    qual: str,
    func: ast.FunctionDef,
    fields: dict[str, dict[str, tuple[str | None, str | None, str | None]]],
) -> list[tuple[str, str]]:
    """(``"Class:field"``, value) for defaults ``func`` gives ``self.f`` or ``self.sub.f``."""
    out: list[tuple[str, str]] = []
    me = func.args.args[0].arg if func.args.args else "self"
    for target, value in _default_assignments(func):
        chain = dotted(target) if isinstance(target, ast.Attribute) else None
        if not chain or not _plain_value(value, me):
            continue
        parts = chain.split(".")
        if parts[0] != me:
            continue
        owner = qual
        for attr in parts[1:-1]:
            sub = fields.get(owner, {}).get(attr)
            if sub is None or sub[1] is None:
                owner = ""
                break
            owner = sub[1]
        if owner and parts[-1] in fields.get(owner, {}):
            out.append((f"{owner}:{parts[-1]}", ast.unparse(value)))
    return out


def changed_fields(old: dict[str, FieldValue], new: dict[str, FieldValue]) -> dict[str, FieldValue]:
    """Fields in both trees whose default changed or that finalisation may now default to."""
    out: dict[str, FieldValue] = {}
    for key, now in new.items():
        was = old.get(key)
        if was is None:
            continue
        if was.default != now.default or set(now.assigned) - set(was.assigned):
            out[key] = now  # a value only dropped moved elsewhere more often than it went
    return out


def config_reads(
    corpus: PluginCorpus,
    index: CodeIndex,
    classes: list[PluginClass],
    watched: dict[str, FieldValue],
    attr_types: dict[str, str],
) -> list[ConfigRead]:
    """Reads in ``classes``' methods of the ``watched`` fields.

    ``attr_types`` maps an attribute name that holds a config object (a config field
    typed with a config class, e.g. ``compilation_config``) to that class. A read is
    ``<expr>.<attr>.<field>`` with ``attr`` in ``attr_types`` and ``field`` watched on
    its class, or a comparison against ``Enum.MEMBER`` where ``Enum`` (through the
    file's imports) is the enum type of a watched field.
    """
    by_enum: dict[str, list[FieldValue]] = {}
    for value in watched.values():
        if value.enum:
            by_enum.setdefault(value.enum, []).append(value)
    out: list[ConfigRead] = []
    for pc in classes:
        names = import_map(corpus, pc.relpath)
        for func in pc.methods():
            for node in method_nodes(func, index.tree.version):
                for fv, text in _reads_in(node, names, index, watched, attr_types, by_enum):
                    out.append(
                        ConfigRead(
                            pc.relpath,
                            getattr(node, "lineno", func.lineno),
                            pc.name,
                            func.name,
                            (fv.owner, fv.name),
                            text,
                        )
                    )
    return out


def _reads_in(
    node: ast.AST,
    names: dict[str, str],
    index: CodeIndex,
    watched: dict[str, FieldValue],
    attr_types: dict[str, str],
    by_enum: dict[str, list[FieldValue]],
) -> list[tuple[FieldValue, str]]:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
        owner = attr_types.get(node.value.attr)
        fv = watched.get(f"{owner}:{node.attr}") if owner else None
        return [(fv, ast.unparse(node))] if fv is not None else []
    if isinstance(node, ast.Compare):
        out: list[tuple[FieldValue, str]] = []
        for side in [node.left, *node.comparators]:
            for sub in walk(side):
                if not isinstance(sub, ast.Attribute):
                    continue
                full = expand(names, dotted(sub.value))
                sym = index.resolve(full) if full else None
                for fv in by_enum.get(sym.qualname, []) if sym is not None else []:
                    out.append((fv, ast.unparse(node)))
        return out
    return []


def config_attr_types(values: dict[str, FieldValue]) -> dict[str, str]:
    """Attribute name -> config class, from the config fields that hold a sub-config.

    A name two fields use for different classes is left out: it says nothing certain.
    """
    out: dict[str, str] = {}
    ambiguous: set[str] = set()
    for value in values.values():
        if value.holds is None:
            continue
        if out.get(value.name, value.holds) != value.holds:
            ambiguous.add(value.name)
        out[value.name] = value.holds
    return {k: v for k, v in out.items() if k not in ambiguous}
