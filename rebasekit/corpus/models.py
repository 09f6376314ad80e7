"""The patch corpus: what a plugin changes upstream and what it relies on there.

Everything here is read from plugin source alone; upstream names are recorded as the
plugin spells them through its imports (``callee``, ``target``), and checks ask a
:class:`~rebasekit.index.CodeIndex` for the canonical definition.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rebasekit.degradation import Degradation
from rebasekit.index.models import Signature
from rebasekit.sourcefile import read_source_text


@dataclass(frozen=True)
class PluginImport:
    """An import of an upstream name: ``from module import name as alias`` / ``import module``."""

    relpath: str
    module: str
    name: str | None
    alias: str  # the local name it binds
    lineno: int
    guard: str | None = None  # "type_checking" / "try" / None
    in_function: str | None = None  # set for imports inside a function body
    version_gate: str | None = None  # PEP 440 specifier of the releases whose branch it is in

    @property
    def target(self) -> str:
        return f"{self.module}.{self.name}" if self.name else self.module


@dataclass(frozen=True)
class UpstreamCall:
    """A call from plugin code into an upstream callable, with its argument shape."""

    relpath: str
    lineno: int
    callee: str  # dotted upstream name as imported (or target.attr for _orig_ calls)
    positional: int
    keywords: tuple[str, ...]
    star_args: bool
    star_kwargs: bool
    in_function: str | None = None  # qualname of the enclosing plugin function
    via_orig: str | None = None  # the _orig_ alias the call went through, if any
    patch: str | None = None  # the enclosing patch class, if any
    through_self: bool = False  # ``self._orig_x(...)``: the alias is reached as a bound method


@dataclass(frozen=True)
class OrigAlias:
    """``_orig_<name> = Target.<attr>`` inside a patch class."""

    alias: str
    attr: str  # the target attribute it captures
    lineno: int
    expr: str
    unwrapped: str | None = (
        None  # "__func__" when written Target.meth.__func__ (call passes cls/self itself)
    )


@dataclass(frozen=True)
class SelfRead:
    """``self.<attr>`` read inside an override (the override relies on that attribute)."""

    attr: str
    lineno: int
    method: str


@dataclass
class PatchAttr:
    """One attribute a patch class sets on its target."""

    name: str
    kind: str  # method / property / staticmethod / classmethod / class / attribute
    lineno: int
    end_lineno: int
    signature: Signature | None = None
    decorators: tuple[str, ...] = ()
    calls_orig: tuple[str, ...] = ()  # _orig_ aliases this override calls
    is_passthrough: bool = False  # written (self, *args, **kwargs)


@dataclass
class PatchClass:
    """``class Name(<PatchBase>[Target])`` and what it sets."""

    name: str
    relpath: str
    modname: str
    lineno: int
    end_lineno: int
    base: str
    target_expr: str
    target: str | None  # dotted upstream name through the plugin's imports
    attributes: list[PatchAttr] = field(default_factory=list)
    orig_aliases: list[OrigAlias] = field(default_factory=list)
    self_reads: list[SelfRead] = field(default_factory=list)

    def attribute(self, name: str) -> PatchAttr | None:
        return next((a for a in self.attributes if a.name == name), None)


@dataclass(frozen=True)
class PluginFile:
    relpath: str
    modname: str
    syntax_error: str | None = None
    error_line: int | None = None


@dataclass
class PluginCorpus:
    """All patches, upstream imports and upstream calls of one plugin package."""

    root: Path  # the folder that contains the plugin package folder
    package: str
    upstream_package: str
    patch_bases: tuple[str, ...]
    files: list[PluginFile] = field(default_factory=list)
    patches: list[PatchClass] = field(default_factory=list)
    imports: list[PluginImport] = field(default_factory=list)
    calls: list[UpstreamCall] = field(default_factory=list)
    comments: dict[str, dict[int, str]] = field(default_factory=dict)  # relpath -> line -> comment
    degradations: list[Degradation] = field(default_factory=list)  # files that could not be read

    def file_path(self, relpath: str) -> Path:
        return self.root / relpath

    def source_text(self, relpath: str) -> str:
        """A plugin file's text as Python decodes it (coding cookie, BOM), ``\n`` line ends."""
        return read_source_text(self.file_path(relpath))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["root"] = str(self.root)
        data.pop("comments", None)
        return data
