"""Plain data parsed out of one module: what it defines, imports and exports.

These records are what the on-disk cache stores, so they hold only builtins and other
records (see :mod:`rebasekit.datacodec`) and are versioned by :data:`FACTS_FORMAT`
(bump it whenever a field changes).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from rebasekit.datacodec import record

FACTS_FORMAT = 6  # 5: an @overload stub gives way to the implementation after it; 6: stubs alone give their union
# 4: modules in a newer grammar parse (rebasekit.pyparse) instead of syntax_error


@record
class ParamKind(str, enum.Enum):
    POSITIONAL_ONLY = "positional-only"
    POSITIONAL_OR_KEYWORD = "positional-or-keyword"
    VAR_POSITIONAL = "var-positional"
    KEYWORD_ONLY = "keyword-only"
    VAR_KEYWORD = "var-keyword"


@record
@dataclass(frozen=True)
class Param:
    """One parameter; ``default``/``annotation`` are source text (None when absent)."""

    name: str
    kind: ParamKind
    default: str | None = None
    annotation: str | None = None

    def render(self) -> str:
        prefix = {ParamKind.VAR_POSITIONAL: "*", ParamKind.VAR_KEYWORD: "**"}.get(self.kind, "")
        text = prefix + self.name
        if self.annotation:
            text += f": {self.annotation}"
        if self.default is not None:
            text += f" = {self.default}" if self.annotation else f"={self.default}"
        return text


@record
@dataclass(frozen=True)
class Signature:
    """A callable's parameters in declaration order, plus its return annotation."""

    params: tuple[Param, ...]
    returns: str | None = None
    is_async: bool = False

    def get(self, name: str) -> Param | None:
        for param in self.params:
            if param.name == name:
                return param
        return None

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    @property
    def positional(self) -> list[Param]:
        """Parameters that can be passed by position, in order."""
        return [
            p
            for p in self.params
            if p.kind in (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)
        ]

    @property
    def var_positional(self) -> Param | None:
        return next((p for p in self.params if p.kind is ParamKind.VAR_POSITIONAL), None)

    @property
    def var_keyword(self) -> Param | None:
        return next((p for p in self.params if p.kind is ParamKind.VAR_KEYWORD), None)

    def render(self) -> str:
        parts: list[str] = []
        seen_kwonly_marker = False
        for i, param in enumerate(self.params):
            if param.kind is ParamKind.KEYWORD_ONLY and not seen_kwonly_marker:
                if not any(p.kind is ParamKind.VAR_POSITIONAL for p in self.params[:i]):
                    parts.append("*")
                seen_kwonly_marker = True
            parts.append(param.render())
            nxt = self.params[i + 1] if i + 1 < len(self.params) else None
            if param.kind is ParamKind.POSITIONAL_ONLY and (
                nxt is None or nxt.kind is not ParamKind.POSITIONAL_ONLY
            ):
                parts.append("/")
        text = f"({', '.join(parts)})"
        return f"{text} -> {self.returns}" if self.returns else text


@record
@dataclass
class DefFact:
    """A definition: module-level or a class member (``kind`` class/function/variable)."""

    name: str
    kind: str
    lineno: int
    end_lineno: int
    signature: Signature | None = None
    decorators: tuple[str, ...] = ()
    bases: tuple[str, ...] = ()  # base-class expressions as written (subscripts stripped)
    members: dict[str, DefFact] = field(default_factory=dict)
    instance_attrs: dict[str, int] = field(default_factory=dict)  # self.X assigned in methods
    guard: str | None = None  # "type_checking" / "try" when defined under such a block


@record
@dataclass(frozen=True)
class ImportFact:
    """One name bound by an import; ``target`` is the absolute dotted thing it names."""

    bound: str  # the local name ("*" for star imports)
    module: str  # absolute module imported from
    name: str | None  # attribute imported (None for ``import a.b``)
    lineno: int
    guard: str | None = None  # "type_checking" / "try" / None
    bound_is_top: bool = False  # ``import a.b`` binds ``a``

    @property
    def target(self) -> str:
        if self.name is not None:
            return f"{self.module}.{self.name}"
        return self.module.split(".")[0] if self.bound_is_top else self.module


@record
@dataclass
class ModuleFacts:
    """Everything the index needs from one file, without keeping its AST around."""

    modname: str
    relpath: str
    is_package: bool
    defs: dict[str, DefFact] = field(default_factory=dict)
    imports: list[ImportFact] = field(default_factory=list)
    all_names: list[str] | None = None
    all_is_dynamic: bool = False
    lazy_exports: dict[str, str] = field(default_factory=dict)  # name -> absolute "mod:attr"
    has_getattr: bool = False
    syntax_error: str | None = None

    def binding(self, name: str) -> DefFact | ImportFact | None:
        """What ``name`` is bound to at module scope (definitions win over imports)."""
        if name in self.defs:
            return self.defs[name]
        for imp in reversed(self.imports):
            if imp.bound == name:
                return imp
        return None

    @property
    def star_imports(self) -> list[str]:
        return [imp.module for imp in self.imports if imp.bound == "*"]

    def public_names(self) -> set[str]:
        """Names ``from mod import *`` would bind if ``__all__`` were absent."""
        names = {n for n in self.defs if not n.startswith("_")}
        names |= {i.bound for i in self.imports if i.bound != "*" and not i.bound.startswith("_")}
        return names
