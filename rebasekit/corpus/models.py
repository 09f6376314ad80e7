"""The patch corpus: what a plugin changes upstream and what it relies on there.

Everything here is read from plugin source alone; upstream names are recorded as the
plugin spells them through its imports (``callee``, ``target``), and checks ask a
:class:`~rebasekit.index.CodeIndex` for the canonical definition. The corpus is the one
parsed view of the plugin: each file is read and parsed once, at extraction, and every
analysis takes its text (:meth:`PluginCorpus.source_text`) and syntax tree
(:meth:`PluginCorpus.module`) from here.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from rebasekit.astutil import keep_children, walk
from rebasekit.datacodec import record
from rebasekit.degradation import Degradation
from rebasekit.index.models import Signature
from rebasekit.sourcefile import read_source_text

# How a patch was found (rebasekit.corpus.discovery has the rules), in reporting order.
RULE_CONFIGURED = "configured-base"  # class X(Base[Target]), Base named by --patch-base / settings
RULE_GENERIC = "generic-base"  # class X(Base[Target]), Base a plugin class that copies onto Target
RULE_ORIG = "orig-capture"  # a class that captures _orig_x = Target.x
RULE_ASSIGNMENT = "assignment"  # Target.x = f / setattr(Target, "x", f) onto an upstream name
RULE_REGISTRY = "registry"  # a plugin subclass of an upstream class handed to an upstream registry
RULES = (RULE_CONFIGURED, RULE_GENERIC, RULE_ORIG, RULE_ASSIGNMENT, RULE_REGISTRY)


N = TypeVar("N", bound=ast.AST)
R = TypeVar("R")


@record
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


@record
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
    version_gate: str | None = None  # PEP 440 specifier of the releases whose branch it is in


@record
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


@record
@dataclass(frozen=True)
class SelfRead:
    """``self.<attr>`` read inside an override (the override relies on that attribute).

    One per attribute and method: the first line it is read on, and the attributes read
    on it in turn (``gpu`` for ``self.positions.gpu``), in the order they appear.
    """

    attr: str
    lineno: int
    method: str
    accessors: tuple[str, ...] = ()


@record
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
    version_gate: str | None = None  # defined in a version-gated branch of the class body
    # Installed by assignment: the plugin function's qualname in the patch's file (its
    # body, for the body checks) and where the assignment is (``relpath:line``).
    source: str | None = None
    installed_at: str | None = None


@record
@dataclass
class PatchClass:
    """What a plugin sets on one upstream target, and the discovery rule that found it.

    ``class Name(<PatchBase>[Target])`` for the class rules; for the assignment rule one
    record per plugin file and target, named after the target as the plugin spells it.
    """

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
    version_gate: str | None = None  # the class statement sits in a version-gated branch
    rule: str = RULE_CONFIGURED  # which of RULES found it

    @property
    def is_class(self) -> bool:
        """Whether a ``class`` statement of the plugin is the patch (not an assignment)."""
        return self.rule != RULE_ASSIGNMENT

    def attribute(self, name: str) -> PatchAttr | None:
        return next((a for a in self.attributes if a.name == name), None)


@record
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
    # Plugin classes subscripted with an upstream name that no rule took as a patch base:
    # what a user would pass to --patch-base when discovery finds nothing.
    base_candidates: tuple[str, ...] = ()
    # The one parsed view: each file's text and syntax tree, kept from extraction.
    sources: dict[str, str] = field(default_factory=dict, repr=False)
    modules: dict[str, ast.Module] = field(default_factory=dict, repr=False, compare=False)
    # Sub-package folder (relpath prefix, "pkg/sub/") -> the upstream release its own extra pins.
    subpackage_pins: dict[str, str] = field(default_factory=dict)
    # Per file, its syntax nodes by node type in ``ast.walk`` order, built on first use.
    _by_type: dict[str, dict[type, list[ast.AST]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def file_path(self, relpath: str) -> Path:
        return self.root / relpath

    def source_text(self, relpath: str) -> str:
        """A plugin file's text as Python decodes it (coding cookie, BOM), ``\n`` line ends.

        The text read at extraction; a file outside the corpus is read from disk.
        """
        text = self.sources.get(relpath)
        return text if text is not None else read_source_text(self.file_path(relpath))

    def module(self, relpath: str) -> ast.Module | None:
        """The syntax tree of a plugin file (None: not in the corpus, or it does not parse).

        A corpus rebuilt from its dict form (:meth:`to_dict` drops trees) parses the text
        here on first use, only for a file that parsed at extraction. The tree is shared
        by every check and must not be changed.
        """
        tree = self.modules.get(relpath)
        if tree is None and relpath in self.sources and self._parsed_ok(relpath):
            tree = self.modules[relpath] = ast.parse(self.sources[relpath], filename=relpath)
        if tree is not None:
            keep_children(tree)  # every check walks it again: see astutil.children
        return tree

    def parsed_relpaths(self) -> list[str]:
        """The files that parsed at extraction, sorted: trees may not be built yet."""
        return sorted(f.relpath for f in self.files if f.syntax_error is None)

    def _parsed_ok(self, relpath: str) -> bool:
        return any(f.relpath == relpath and f.syntax_error is None for f in self.files)

    def patch_counts(self) -> dict[str, int]:
        """Patches per discovery rule, in the order of the rules."""
        counts = {rule: sum(1 for p in self.patches if p.rule == rule) for rule in RULES}
        return {rule: n for rule, n in counts.items() if n}

    def class_node(self, patch: PatchClass) -> ast.ClassDef | None:
        """The ``class`` statement of ``patch`` in its file's syntax tree."""
        if not patch.is_class:
            return None
        named = [n for n in self.nodes(patch.relpath, ast.ClassDef) if n.name == patch.name]
        return next((n for n in named if n.lineno == patch.lineno), named[0] if named else None)

    def nodes(self, relpath: str, kind: type[N]) -> list[N]:
        """Every node of exactly type ``kind`` in a file's tree, in ``ast.walk`` order.

        One walk per file serves every check: several used to walk each whole module
        again for each patch or call they looked at.
        """
        table = self._by_type.get(relpath)
        if table is None:
            table = {}
            module = self.module(relpath)
            for node in walk(module) if module is not None else ():
                table.setdefault(type(node), []).append(node)
            self._by_type[relpath] = table
        return table.get(kind, [])  # type: ignore[return-value]

    def to_data(self) -> dict[str, Any]:
        """Everything extraction found, as records :mod:`rebasekit.datacodec` can store.

        Unlike :meth:`to_dict` (the report view) it keeps the texts and comments, so
        :meth:`from_data` gives back a corpus equal to the one extracted; syntax trees
        are left out and parsed again on first use.
        """
        return {
            "root": str(self.root),
            "package": self.package,
            "upstream_package": self.upstream_package,
            "patch_bases": self.patch_bases,
            "files": self.files,
            "patches": self.patches,
            "imports": self.imports,
            "calls": self.calls,
            "comments": self.comments,
            "degradations": [(d.kind, d.subject, d.message, d.fix) for d in self.degradations],
            "base_candidates": self.base_candidates,
            "sources": self.sources,
            "subpackage_pins": self.subpackage_pins,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> PluginCorpus:
        """The corpus :meth:`to_data` describes; raises ``TypeError``/``KeyError`` on other data."""
        fields = dict(data)
        fields["root"] = Path(fields["root"])
        fields["degradations"] = [Degradation(*d) for d in fields["degradations"]]
        corpus = cls(**fields)
        if not all(isinstance(f, PluginFile) for f in corpus.files) or not all(
            isinstance(p, PatchClass) for p in corpus.patches
        ):
            raise TypeError("not the data of a plugin corpus")
        return corpus

    def to_dict(self) -> dict[str, Any]:
        data = asdict(replace(self, sources={}, modules={}, _by_type={}))
        data["root"] = str(self.root)
        for key in ("comments", "sources", "modules", "_by_type"):
            data.pop(key, None)
        return data


def corpus_memo(corpus: PluginCorpus, key: tuple, build: Callable[[], R]) -> R:
    """One result per corpus and ``key`` for an analysis that reads nothing but the corpus.

    The corpus never changes after extraction, and a scan asks the same questions of it
    at NEW and again at OLD; a narrowed copy (``dataclasses.replace``) starts empty.
    Callers must not change what they get back.
    """
    memo: dict[tuple, Any] = corpus.__dict__.setdefault("_analysis_memo", {})
    if key not in memo:
        memo[key] = build()
    return memo[key]
