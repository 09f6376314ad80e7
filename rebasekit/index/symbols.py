"""What the index answers with: a resolved definition and how resolution went."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rebasekit.index.models import DefFact, Signature

if TYPE_CHECKING:
    from rebasekit.index.code_index import CodeIndex

_PROPERTY_DECORATORS = ("property", "cached_property")


@dataclass
class Symbol:
    """A definition in the tree, named by its canonical (defining-module) qualname.

    ``kind`` is module, class, function or variable. ``bases`` are resolved base-class
    qualnames (or the raw text of bases the tree does not define, e.g. ``nn.Module``).
    """

    kind: str
    qualname: str
    relpath: str
    lineno: int | None = None
    end_lineno: int | None = None
    fact: DefFact | None = None
    bases: tuple[str, ...] = ()
    external_bases: tuple[str, ...] = ()  # bases not defined in the tree
    guard: str | None = None
    index: CodeIndex | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def module(self) -> str:
        """The module that defines this symbol (for a module: itself)."""
        if self.kind == "module":
            return self.qualname
        assert self.index is not None
        return self.index.tree.path_to_module(self.relpath)

    @property
    def signature(self) -> Signature | None:
        return self.fact.signature if self.fact else None

    @property
    def decorators(self) -> tuple[str, ...]:
        return self.fact.decorators if self.fact else ()

    @property
    def members(self) -> dict[str, DefFact]:
        """Members defined in this class body (not inherited; see ``CodeIndex.lookup_member``)."""
        return self.fact.members if self.fact and self.kind == "class" else {}

    @property
    def is_property(self) -> bool:
        return any(
            d.split(".")[-1] in _PROPERTY_DECORATORS or d.endswith((".getter", ".setter"))
            for d in self.decorators
        )

    @property
    def is_staticmethod(self) -> bool:
        return "staticmethod" in self.decorators

    @property
    def is_classmethod(self) -> bool:
        return "classmethod" in self.decorators

    @property
    def member_kind(self) -> str:
        """method / property / staticmethod / classmethod / class / attribute / module."""
        if self.kind == "function":
            if self.is_property:
                return "property"
            if self.is_staticmethod:
                return "staticmethod"
            if self.is_classmethod:
                return "classmethod"
            return "method"
        return {"variable": "attribute"}.get(self.kind, self.kind)

    @property
    def source(self) -> str:
        """Source text of the whole definition (the whole file for a module)."""
        assert self.index is not None
        if self.kind == "module" or self.lineno is None:
            return self.index.text(self.relpath)
        lines = self.index.lines(self.relpath)
        return "".join(lines[self.lineno - 1 : self.end_lineno or self.lineno])


class Status(str, enum.Enum):
    FOUND = "found"
    MODULE_MISSING = "module-missing"  # even the top-level package is absent
    MISSING = "missing"  # the container exists, the attribute does not
    DYNAMIC = "dynamic"  # served by __getattr__ or an out-of-tree base: cannot tell statically


@dataclass
class Resolution:
    """Outcome of resolving a dotted name; ``container`` is the deepest part that resolved."""

    status: Status
    symbol: Symbol | None = None
    container: Symbol | None = None
    missing: str | None = None  # the first attribute that could not be found

    @property
    def found(self) -> bool:
        return self.status is Status.FOUND
