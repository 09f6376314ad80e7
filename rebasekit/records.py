"""One record type per finding code: the facts a check found, before they become prose.

A check builds a record (``RK303(patch=..., attribute=...)``) instead of a sentence. The
record declares which of its fields *identify* it (:func:`ident`): the same finding at
OLD and at NEW has the same identity, whatever the trees' versions or line numbers, so
drift is classified from these fields and not from message text. ``explain(style)``
words it for one output: the plain styles (terminal text, JSON, SARIF ``text``) share
one wording; markdown (SARIF ``markdown``, the runbook) sets code names as code spans.

:class:`~rebasekit.findings.Finding` stays the wire shape: a finding carries the
record, its wording in plain text and, in ``details``, the record's fields.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rebasekit import codes as _codes
from rebasekit.findings import Finding, Location, Severity

Quote = Callable[[str], str]


class Style(str, enum.Enum):
    """The outputs a record is worded for."""

    TEXT = "text"
    JSON = "json"
    SARIF = "sarif"
    MARKDOWN = "markdown"


def _plain(text: str) -> str:
    return text


def _code_span(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def quote_for(style: Style) -> Quote:
    """How code names are set in ``style``: as they are, or as markdown code spans."""
    return _code_span if style is Style.MARKDOWN else _plain


def ident(**kwargs: Any) -> Any:
    """A dataclass field that is part of the record's identity across trees."""
    return field(metadata={"identity": True}, **kwargs)


RECORDS: dict[str, type[Record]] = {}


@dataclass(frozen=True)
class Record:
    """The facts of one finding; subclasses set ``code`` and declare their fields."""

    code: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("code"):
            if cls.code in RECORDS:
                raise ValueError(f"two record types for {cls.code}")
            RECORDS[cls.code] = cls

    @classmethod
    def identity_fields(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("identity"))

    def identity(self) -> tuple[Any, ...]:
        """The values that make this the same finding at OLD and at NEW."""
        return tuple(_hashable(getattr(self, name)) for name in self.identity_fields())

    @property
    def subject(self) -> str:
        """What the finding is about, as one string (kept in ``details.subject``)."""
        return "|".join(str(v) for v in self.identity())

    def wording(self, q: Quote) -> str:
        raise NotImplementedError

    def explain(self, style: Style = Style.TEXT) -> str:
        return self.wording(quote_for(Style(style)))

    def details(self) -> dict[str, Any]:
        """The record's fields for the JSON report, plus ``subject``."""
        data = {f.name: _plain_data(getattr(self, f.name)) for f in dataclasses.fields(self)}
        data["subject"] = self.subject
        return data


def finding_of(
    record: Record,
    *,
    plugin: Location | None = None,
    upstream: Location | None = None,
    suggestion: str | None = None,
    severity: Severity | None = None,
) -> Finding:
    """The wire-shape :class:`Finding` of ``record``, with its code's severity unless overridden."""
    return Finding(
        code=record.code,
        severity=severity or _codes.get(record.code).severity,
        message=record.explain(Style.TEXT),
        plugin=plugin,
        upstream=upstream,
        suggestion=suggestion,
        details=record.details(),
        record=record,
    )


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _plain_data(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain_data(v) for v in value]
    return value


def _guard_note(guard: str | None) -> str:
    return {
        "type_checking": " (under TYPE_CHECKING)",
        "try": " (inside try/except ImportError)",
    }.get(guard or "", "")


# -- RK0xx: input and meta ------------------------------------------------------------
@dataclass(frozen=True)
class PluginSyntaxError(Record):
    code: ClassVar[str] = "RK001"
    file: str = ident()
    error: str = ""

    def wording(self, q: Quote) -> str:
        return f"{q(self.file)} does not parse: {self.error}; the file was skipped"


@dataclass(frozen=True)
class PatchTargetUnresolved(Record):
    code: ClassVar[str] = "RK002"
    target_expr: str = ident()
    patch: str = ""

    def wording(self, q: Quote) -> str:
        return f"target '{q(self.target_expr)}' of {q(self.patch)} is not an imported upstream name"


@dataclass(frozen=True)
class UnusedSuppression(Record):
    code: ClassVar[str] = "RK003"
    codes: tuple[str, ...] = ident()

    @property
    def subject(self) -> str:
        return ",".join(self.codes)

    def wording(self, q: Quote) -> str:
        return f"suppression of {', '.join(self.codes) or 'nothing'} matches no finding"


# -- RK1xx: imports -------------------------------------------------------------------
@dataclass(frozen=True)
class _ImportRecord(Record):
    target: str = ident()  # the dotted name imported (``vllm.x.Name`` or the module)
    module: str = ""
    guard: str | None = None  # "type_checking" | "try" | None


@dataclass(frozen=True)
class ImportModuleMissing(_ImportRecord):
    code: ClassVar[str] = "RK101"
    tree: str = ""
    # The module that is absent: the imported one, or one it leads to (a lazy export).
    missing: str = ""

    def wording(self, q: Quote) -> str:
        absent = self.missing or self.module
        return f"module {q(absent)} does not exist in {self.tree}{_guard_note(self.guard)}"


@dataclass(frozen=True)
class ImportSymbolMissing(_ImportRecord):
    code: ClassVar[str] = "RK102"
    name: str = ""
    tree: str = ""

    def wording(self, q: Quote) -> str:
        return (
            f"{q(self.module)} has no name {q(self.name)} in {self.tree}{_guard_note(self.guard)}"
        )


@dataclass(frozen=True)
class ImportSymbolMoved(_ImportRecord):
    code: ClassVar[str] = "RK103"
    name: str = ""
    moved_to: str = ""  # qualname of the definition found elsewhere
    new_module: str = ""
    also_in: tuple[str, ...] = ()  # other modules defining the name

    def wording(self, q: Quote) -> str:
        others = (
            f" (also defined in {', '.join(q(m) for m in self.also_in)})" if self.also_in else ""
        )
        return (
            f"{q(self.name)} is no longer in {q(self.module)}; it is defined in "
            f"{q(self.new_module)}{others}{_guard_note(self.guard)}"
        )


@dataclass(frozen=True)
class ImportSymbolRenamed(_ImportRecord):
    code: ClassVar[str] = "RK104"
    name: str = ""
    renamed_to: str = ""  # qualname of the renamed definition
    new_name: str = ""
    defined_at: str = ""  # ``path:line`` in NEW

    def wording(self, q: Quote) -> str:
        return (
            f"{q(self.name)} from {q(self.module)} was renamed to {q(self.new_name)} "
            f"(same body shape, defined at {self.defined_at}){_guard_note(self.guard)}"
        )


@dataclass(frozen=True)
class ImportSymbolDeleted(_ImportRecord):
    code: ClassVar[str] = "RK105"
    name: str = ""
    defined_at: str = ""  # ``path:line`` in OLD
    old_tree: str = ""

    def wording(self, q: Quote) -> str:
        return (
            f"{q(self.name)} was deleted from {q(self.module)} (it was defined at "
            f"{self.defined_at} in {self.old_tree}){_guard_note(self.guard)}"
        )


# -- RK2xx: targets, overrides, aliases -----------------------------------------------
@dataclass(frozen=True)
class PatchTargetMissing(Record):
    code: ClassVar[str] = "RK201"
    target: str = ident()
    tree: str = ""

    def wording(self, q: Quote) -> str:
        return f"patch target {q(self.target)} does not exist in {self.tree}"


@dataclass(frozen=True)
class PatchTargetMoved(Record):
    code: ClassVar[str] = "RK202"
    target: str = ident()
    moved_to: str = ""  # the module (a module target) or the class's new qualname
    name: str | None = None  # the class name (None when the target is a module)
    new_module: str = ""

    def wording(self, q: Quote) -> str:
        if self.name is None:
            return f"patch target module {q(self.target)} moved to {q(self.moved_to)}"
        return (
            f"patch target {q(self.target)} is gone; {q(self.name)} is now defined in "
            f"{q(self.new_module)}"
        )


@dataclass(frozen=True)
class OverrideTargetRemoved(Record):
    code: ClassVar[str] = "RK203"
    attr: str = ident()
    patch: str = ""
    replaced: str = ""  # qualname the override replaced at OLD
    old_tree: str = ""
    target: str = ""  # the target class at NEW

    def wording(self, q: Quote) -> str:
        return (
            f"{q(self.patch + '.' + self.attr)} replaced {q(self.replaced)} in {self.old_tree}; "
            f"{q(self.target)} no longer has {q(self.attr)}"
        )


@dataclass(frozen=True)
class _SignatureMismatch(Record):
    attr: str = ident()
    param: str = ident()
    patch: str = ""
    upstream: str = ""  # qualname of the upstream definition
    problem: str = ""
    upstream_signature: str = ""
    override_signature: str = ""

    @property
    def subject(self) -> str:
        return f"{self.attr}:{self.param}"

    def wording(self, q: Quote) -> str:
        return f"{q(self.patch + '.' + self.attr)} vs {q(self.upstream)}: {self.problem}"


@dataclass(frozen=True)
class SignatureParamsMissing(_SignatureMismatch):
    code: ClassVar[str] = "RK210"


@dataclass(frozen=True)
class SignatureParamsExtra(_SignatureMismatch):
    code: ClassVar[str] = "RK211"


@dataclass(frozen=True)
class SignatureParamRenamed(_SignatureMismatch):
    code: ClassVar[str] = "RK212"


@dataclass(frozen=True)
class SignatureParamKind(_SignatureMismatch):
    code: ClassVar[str] = "RK213"


@dataclass(frozen=True)
class SignatureDefaults(_SignatureMismatch):
    code: ClassVar[str] = "RK214"


@dataclass(frozen=True)
class SignatureAnnotations(_SignatureMismatch):
    code: ClassVar[str] = "RK215"
    old_default: str | None = None  # upstream's default at OLD, when the override keeps it
    old_tree: str | None = None

    def wording(self, q: Quote) -> str:
        text = super().wording(q)
        if self.old_default is not None:
            text += (
                f"; the override re-declares upstream's old default {self.old_default} "
                f"(at {self.old_tree}), so callers relying on the new default get the old one"
            )
        return text


@dataclass(frozen=True)
class OverrideKindChanged(Record):
    code: ClassVar[str] = "RK216"
    attr: str = ident()
    patch: str = ""
    own_kind: str = ""
    upstream_kind: str = ""
    upstream: str = ""

    def wording(self, q: Quote) -> str:
        return (
            f"{q(self.attr)} is a {self.own_kind} in {q(self.patch)} but a {self.upstream_kind} "
            f"upstream ({q(self.upstream)})"
        )


@dataclass(frozen=True)
class OrigAliasMissing(Record):
    code: ClassVar[str] = "RK220"
    alias: str = ident()
    patch: str = ""
    attr: str = ""
    target: str = ""

    def wording(self, q: Quote) -> str:
        return (
            f"{q(self.patch + '.' + self.alias)} captures {q(self.attr)}, which "
            f"{q(self.target)} no longer has"
        )


# -- RK3xx: calls, returns, attributes ------------------------------------------------
@dataclass(frozen=True)
class CallNoLongerBinds(Record):
    code: ClassVar[str] = "RK301"
    callee_expr: str = ident()  # the callee as the plugin names it
    positional: int = ident()
    keywords: tuple[str, ...] = ident()
    callee: str = ""  # qualname it resolves to at NEW
    call_kind: str = "call"  # "constructor" | "orig" | "super" | "attribute" | "call"
    via: str | None = None  # the ``_orig_`` alias (or ``self.X`` attribute) called through
    tree: str = ""
    problems: tuple[str, ...] = ()
    upstream_signature: str = ""
    old_signature: str | None = None
    moved_to: str | None = None  # where upstream makes the call now

    @property
    def subject(self) -> str:
        return f"{self.callee_expr}|{self.positional}|{','.join(self.keywords)}"

    def _what(self, q: Quote) -> str:
        if self.call_kind == "constructor":
            name = self.callee.rsplit(".", 1)[-1]
            return f"constructor call {q(name + '(...)')} ({q(self.callee + '.__init__')})"
        if self.call_kind == "orig":
            return f"call through {q(self.via or '')} to {q(self.callee)}"
        if self.call_kind == "attribute":
            return f"call through {q(self.via or '')} to {q(self.callee)}"
        if self.call_kind == "super":
            return f"super() call to {q(self.callee)}"
        return f"call to {q(self.callee)}"

    def wording(self, q: Quote) -> str:
        text = (
            f"{self._what(q)} no longer binds at {self.tree}: {'; '.join(self.problems)}; "
            f"it now takes {q(self.upstream_signature)}"
        )
        return text + (f" (was {q(self.old_signature)})" if self.old_signature else "")


@dataclass(frozen=True)
class UnpackingMismatch(Record):
    code: ClassVar[str] = "RK302"
    callee_expr: str = ident()
    arity: int = ident()
    callee: str = ""
    tree: str = ""
    returns: str = ""
    old_tree: str | None = None
    old_returns: str | None = None

    def wording(self, q: Quote) -> str:
        text = (
            f"unpacks {q(self.callee + '(...)')} into {self.arity} names, but at {self.tree} "
            f"it returns {self.returns}"
        )
        if self.old_returns is not None:
            text += f" (at {self.old_tree}: {self.old_returns})"
        return text


@dataclass(frozen=True)
class StarredReturnShifted(Record):
    code: ClassVar[str] = "RK310"
    callee_expr: str = ident()
    prefix: int = ident()  # names bound before the starred one
    callee: str = ""
    base_version: str = ""
    new_version: str = ""
    old_arities: tuple[int, ...] = ()
    new_arities: tuple[int, ...] = ()
    too_short: bool = False

    def wording(self, q: Quote) -> str:
        was = " or ".join(str(n) for n in self.old_arities)
        now = " or ".join(str(n) for n in self.new_arities)
        text = (
            f"unpacks {q(self.callee + '(...)')} as {self.prefix} names and a starred rest, but "
            f"its tuple went from {was} elements at {self.base_version} to {now} at "
            f"{self.new_version}"
        )
        if self.too_short:
            text += f": fewer than the {self.prefix} names before the star"
        return text


@dataclass(frozen=True)
class CalledTargetGone(Record):
    code: ClassVar[str] = "RK311"
    callee_expr: str = ident()  # the dotted name the plugin calls, through its imports
    in_function: str = ident()
    was: str = ""  # qualname at the base
    kind: str = ""  # "function" | "class"
    defined_at: str = ""  # ``path:line`` at the base
    base_version: str = ""
    new_version: str = ""
    module_gone: bool = False
    moved_to: str | None = None  # a definition of the same name and kind elsewhere at NEW

    def wording(self, q: Quote) -> str:
        how = (
            f"its module {q(self.was.rsplit('.', 1)[0])} was removed"
            if self.module_gone
            else "it was deleted from its module"
        )
        return (
            f"{q(self.in_function)} calls {q(self.callee_expr + '(...)')}, which is gone at "
            f"{self.new_version}: {how} (at {self.base_version} the {self.kind} was defined at "
            f"{self.defined_at})"
            + (f"; a {self.kind} of that name is now {q(self.moved_to)}" if self.moved_to else "")
        )


@dataclass(frozen=True)
class ReplacedMethodDuty(Record):
    code: ClassVar[str] = "RK312"
    target: str = ident()  # the patch target class
    method: str = ident()  # the replaced method
    attribute: str = ident()  # what upstream's new version assigns
    patch: str = ""
    upstream: str = ""  # qualname of the replaced method at NEW
    reader: str = ""  # ``Class.method`` that reads the attribute at NEW
    reader_at: str = ""  # ``path:line`` of that read
    base_version: str = ""
    new_version: str = ""

    def wording(self, q: Quote) -> str:
        return (
            f"{q(self.patch + '.' + self.method)} replaces {q(self.upstream)} without calling it; "
            f"at {self.new_version} upstream's version assigns {q('self.' + self.attribute)} "
            f"(it did not at {self.base_version}), which {q(self.reader)} reads "
            f"({self.reader_at}), and the replacement never assigns it"
        )


@dataclass(frozen=True)
class AttributeGone(Record):
    code: ClassVar[str] = "RK303"
    target: str = ident()  # the patch target class
    attribute: str = ident()
    patch: str = ""
    method: str = ident(default="")  # the override that reads it (each reader is reported)
    cls: str = ""  # qualname of the class at NEW
    tree: str = ""
    old_version: str | None = None
    old_where: str | None = None  # the method that assigned it at the base
    old_value: str | None = None
    # The base pin compared against, when it was read and did not provide it either.
    also_missing_at: str | None = None

    @property
    def subject(self) -> str:
        return f"{self.target}.{self.attribute}"

    @property
    def removed(self) -> bool:
        """Upstream provided it at the base and not any more (else: never seen upstream)."""
        return self.old_version is not None

    def wording(self, q: Quote) -> str:
        reads = f"{q(self.patch + '.' + self.method)} reads {q('self.' + self.attribute)}, but "
        if not self.removed:
            pins = f"at {self.tree}" + (
                f" or {self.also_missing_at}"
                if self.also_missing_at and self.also_missing_at != self.tree
                else ""
            )
            return (
                f"{reads}{q(self.cls)} (with its bases) does not assign or define "
                f"{q(self.attribute)} {pins}: not defined upstream, so the plugin must set it "
                "itself (in a way this analysis did not see) or the read fails"
            )
        was = (
            f"{q(self.old_where or '')} assigned it from `{self.old_value}`"
            if self.old_value is not None
            else "it was defined"
        )
        return (
            f"{reads}{q(self.cls)} (with its bases) no longer assigns or defines "
            f"{q(self.attribute)} at {self.tree}; at {self.old_version} {was}"
        )


@dataclass(frozen=True)
class AttributeKindChanged(Record):
    code: ClassVar[str] = "RK304"
    target: str = ident()
    attribute: str = ident()
    patch: str = ""
    method: str = ident(default="")
    cls: str = ""  # the class's short name
    accessors: tuple[str, ...] = ()  # ``gpu`` for ``self.X.gpu``
    new_kind: str = ""
    new_value: str = ""
    new_where: str = ""
    old_kind: str = ""
    old_value: str = ""
    old_where: str = ""
    old_version: str | None = None

    @property
    def subject(self) -> str:
        return f"{self.target}.{self.attribute}"

    def wording(self, q: Quote) -> str:
        uses = ", ".join(q("." + a) for a in self.accessors)
        return (
            f"{q(self.patch + '.' + self.method)} reads {q('self.' + self.attribute)}"
            f"{' (uses ' + uses + ')' if uses else ''}; {q(self.cls)} now assigns it "
            f"{self.new_kind} (`{self.new_value}` in {q(self.new_where)}) instead of "
            f"{self.old_kind} (`{self.old_value}` in {q(self.old_where)} at {self.old_version})"
        )


@dataclass(frozen=True)
class AttributeWrapped(Record):
    code: ClassVar[str] = "RK315"
    target: str = ident()
    attribute: str = ident()
    method: str = ident(default="")
    patch: str = ""
    cls: str = ""  # the class's short name
    accessors: tuple[str, ...] = ()
    sets: bool = False  # the patch sets an attribute of it (``self.X.a = v``)
    wrapper: str = ""  # the wrapping class as upstream writes it
    wrap_value: str = ""
    wrap_where: str = ""
    unwrapped_by: str | None = None  # the upstream method handing out the wrapped object
    old_version: str | None = None
    new_version: str | None = None

    def wording(self, q: Quote) -> str:
        uses = ", ".join(q("." + a) for a in self.accessors)
        how = "sets attributes of" if self.sets else "reads"
        text = (
            f"{q(self.patch + '.' + self.method)} {how} {q('self.' + self.attribute)}"
            f"{' (uses ' + uses + ')' if uses else ''}; "
            f"at {self.new_version} {q(self.cls)} may wrap it ({q(self.wrap_value)} in "
            f"{q(self.wrap_where)}, not at {self.old_version}), so the patch can reach the "
            f"{q(self.wrapper)} instead"
        )
        if self.unwrapped_by:
            text += f"; {q(self.unwrapped_by)} returns the unwrapped object"
        return text


# -- RK4xx: bypassed and mirrored code ------------------------------------------------
@dataclass(frozen=True)
class ParallelImplementation(Record):
    code: ClassVar[str] = "RK401"
    target: str = ident()  # the patched class (as the plugin names it)
    twin: str = ident()  # qualname of the parallel class
    patched: str = ""  # the patched class's qualname
    patch: str = ""
    twin_path: str = ""
    overridden: tuple[str, ...] = ()
    shared_members: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()  # each selecting switch, rendered
    selectors: tuple[dict[str, Any], ...] = ()

    def wording(self, q: Quote) -> str:
        if self.switches:
            how = "; ".join(self.switches)
        else:
            how = f"no selecting switch found, but it defines {', '.join(self.shared_members)} too"
        overridden = ", ".join(self.overridden) or "nothing"
        return (
            f"{q(self.patched)} (patched by {q(self.patch)}) has a parallel implementation "
            f"{q(self.twin)} in {self.twin_path}; configurations that use it bypass the patch "
            f"({overridden} never run there). {how}"
        )


@dataclass(frozen=True)
class ConfigDefaultChanged(Record):
    code: ClassVar[str] = "RK313"
    target: str = ident()  # qualname of the upstream config class
    attribute: str = ident()  # the config field
    owner: str = ""  # the plugin class (or function) that reads it
    readers: tuple[str, ...] = ()  # its methods that read it
    read_as: str = ""  # the first read, as written
    old_default: str | None = None
    new_default: str | None = None
    added: tuple[str, ...] = ()  # values finalisation assigns at NEW only
    removed: tuple[str, ...] = ()  # values it assigned at OLD only
    assigned_in: tuple[str, ...] = ()  # the finalisers assigning it at NEW
    old_version: str | None = None
    new_version: str | None = None

    def wording(self, q: Quote) -> str:
        field_name = f"{self.target.rsplit('.', 1)[-1]}.{self.attribute}"
        where = ", ".join(q(r) for r in self.readers) or q(self.owner)
        text = f"{where} read{'s' if len(self.readers) < 2 else ''} {q(field_name)} ({q(self.read_as)}), whose "
        changes: list[str] = []
        if self.old_default != self.new_default:
            changes.append(
                f"default changed from {q(str(self.old_default))} to {q(str(self.new_default))}"
            )
        if self.added or self.removed:
            part = (
                f"value assigned in {', '.join(q(a) for a in self.assigned_in) or '__post_init__'}"
            )
            if self.added:
                part += " now includes " + ", ".join(q(a) for a in self.added)
            if self.removed:
                part += (" and" if self.added else "") + " no longer includes "
                part += ", ".join(q(r) for r in self.removed)
            changes.append(part)
        return text + "; ".join(changes) + f" between {self.old_version} and {self.new_version}"


@dataclass(frozen=True)
class PositionalArgumentShifted(Record):
    code: ClassVar[str] = "RK314"
    callee: str = ident()  # qualname of the upstream function at NEW
    param: str = ident()  # the removed parameter the argument filled at OLD
    caller: str = ""  # the plugin function making the call
    position: int = 0  # 0-based among the positional arguments after any bound receiver
    lands_in: str = ""  # the NEW parameter that position fills
    old_tree: str = ""
    tree: str = ""
    old_signature: str = ""
    new_signature: str = ""

    def wording(self, q: Quote) -> str:
        return (
            f"{q(self.caller)} passes argument {self.position + 1} of {q(self.callee)}(...) by "
            f"position into {q(self.param)}, which upstream removed between {self.old_tree} "
            f"and {self.tree} ({q(self.old_signature)} -> {q(self.new_signature)}); that "
            f"argument now fills {q(self.lands_in)}"
        )


@dataclass(frozen=True)
class CopiedClassSignatureDrift(Record):
    code: ClassVar[str] = "RK406"
    upstream: str = ident()  # qualname of the upstream method at NEW
    method: str = ident()  # the plugin copy, ``Class.method``
    param: str = ident()  # the parameter that changed ("" when only the order did)
    change: str = ""  # "removed" | "added" | "reordered"
    old_signature: str = ""
    new_signature: str = ""
    old_tree: str = ""
    tree: str = ""

    def wording(self, q: Quote) -> str:
        what = (
            f"{self.change} parameter {q(self.param)}" if self.param else "reordered its parameters"
        )
        return (
            f"{q(self.method)} copies {q(self.upstream)} with its {self.old_tree} parameters "
            f"{q(self.old_signature)}; upstream {what} by {self.tree} "
            f"({q(self.new_signature)})"
        )


@dataclass(frozen=True)
class BaseBodyChanged(Record):
    code: ClassVar[str] = "RK402"
    upstream: str = ident()  # qualname of the upstream definition at NEW
    patch: str = ""
    attribute: str = ""
    relation: str = ""  # "copies" | "wraps" | "replaces"
    base_version: str | None = None
    new_version: str | None = None
    removed: int = 0
    added: int = 0
    mirrors: bool = False
    similarity: float = 0.0
    diff: str = ""
    touches: tuple[str, ...] = ()  # for wrappers: where the change meets what the wrapper uses

    def wording(self, q: Quote) -> str:
        text = (
            f"{q(self.patch + '.' + self.attribute)} {self.relation} {q(self.upstream)}, whose body "
            f"changed upstream between {self.base_version} and {self.new_version} "
            f"(-{self.removed}/+{self.added} lines)"
        )
        if self.touches:
            text += "; the original now " + "; ".join(self.touches)
        return text


@dataclass(frozen=True)
class ForkDrifted(Record):
    code: ClassVar[str] = "RK403"
    upstream_path: str = ident()
    state: str = ident()  # "unreadable" (recorded base) | "gone" (at NEW) | "changed"
    changed: tuple[str, ...] = ident(default=())  # qualnames that changed (state "changed")
    fork: str = ""  # the plugin file
    version: str = ""  # the recorded version
    new_version: str = ""
    reason: str | None = None  # why the recorded base could not be read
    changes: tuple[dict[str, Any], ...] = ()  # {"qualname", "status", "forked"}
    module_level_changed: bool = False
    diffs: dict[str, str] = field(default_factory=dict)
    declared_by: str | None = None

    @property
    def subject(self) -> str:
        if self.state == "unreadable":
            return f"{self.upstream_path}|base"
        if self.state == "gone":
            return f"{self.upstream_path}|gone"
        return f"{self.upstream_path}|{','.join(self.changed)}"

    def wording(self, q: Quote) -> str:
        if self.state == "unreadable":
            return f"fork {q(self.fork)}: cannot read the recorded upstream ({self.reason})"
        if self.state == "gone":
            return (
                f"fork {q(self.fork)}: upstream {q(self.upstream_path)} no longer exists at "
                f"{self.new_version}"
            )
        groups = "; ".join(
            f"{q(c['qualname'])} {c['status']}" + (" [forked]" if c["forked"] else "")
            for c in self.changes
        )
        if self.module_level_changed:
            groups += ("; " if groups else "") + "module-level code changed"
        forked = [c["qualname"] for c in self.changes if c["forked"]]
        tail = (
            f" — {len(forked)} forked definition(s) affected: {', '.join(q(n) for n in forked)}"
            if forked
            else " — none of the forked definitions"
        )
        return (
            f"fork {q(self.fork)} of {q(self.upstream_path + '@' + self.version)}: upstream "
            f"changed by {self.new_version}: {groups}{tail}"
        )


@dataclass(frozen=True)
class UndeclaredFork(Record):
    code: ClassVar[str] = "RK404"
    upstream_path: str = ident()
    fork: str = ""  # the plugin file
    version: str = ""
    shared: tuple[str, ...] = ()
    similar: tuple[str, ...] = ()
    declaration: str = ""

    def wording(self, q: Quote) -> str:
        return (
            f"{q(self.fork)} copies {q(self.upstream_path)} ({len(self.similar)} of "
            f"{len(self.shared)} shared definitions alike: {', '.join(self.similar)}) but "
            f"declares no fork; treated as a fork at {self.version}"
        )


# -- drift kinds read from upstream's own definitions and call sites -------------------
def _was(old_signature: str | None, old_tree: str | None, q: Quote) -> str:
    return f" (at {old_tree}: {q(old_signature)})" if old_signature and old_tree else ""


def _shown_by(site: str | None, q: Quote) -> str:
    return f"; upstream calls it as {q(site)}" if site else ""


@dataclass(frozen=True)
class CallerKeywordMissing(Record):
    code: ClassVar[str] = "RK217"
    attr: str = ident()  # the overridden method
    keyword: str = ident()
    patch: str = ""
    upstream: str = ""  # qualname of the overridden method at NEW
    tree: str = ""
    override_signature: str = ""
    caller: str = ""  # qualname of the upstream function making the call
    call_site: str = ""  # path:line
    call_text: str = ""

    def wording(self, q: Quote) -> str:
        return (
            f"{q(self.patch + '.' + self.attr)} {q(self.override_signature)} does not accept "
            f"keyword {q(self.keyword)}, which upstream {q(self.caller)} passes at {self.tree} "
            f"({self.call_site}: {q(self.call_text)})"
        )


@dataclass(frozen=True)
class ForwardsRemovedParam(Record):
    code: ClassVar[str] = "RK218"
    attr: str = ident()  # the override
    param: str = ident()  # the parameter forwarded by position
    patch: str = ""
    upstream: str = ""
    callee: str = ""  # how the original is reached (``_orig_x`` / ``super().x``)
    position: int = 0  # 0-based position among the call's arguments
    lands_in: str | None = None  # the NEW parameter that position fills
    old_tree: str = ""
    tree: str = ""
    old_signature: str = ""
    new_signature: str = ""

    def wording(self, q: Quote) -> str:
        lands = f"; that position now fills {q(self.lands_in)}" if self.lands_in else ""
        return (
            f"{q(self.patch + '.' + self.attr)} passes {q(self.param)} by position to "
            f"{q(self.callee)}, but upstream {q(self.upstream)} dropped {q(self.param)} between "
            f"{self.old_tree} and {self.tree} ({q(self.old_signature)} -> "
            f"{q(self.new_signature)}){lands}"
        )


@dataclass(frozen=True)
class CapturedAttributeMissing(Record):
    code: ClassVar[str] = "RK221"
    target: str = ident()  # dotted upstream name captured, as imported
    name: str = ident()  # the plugin variable it is stored in
    scope: str = ""  # "module" or the enclosing function
    container: str = ""  # qualname of the class/module that lacks it
    tree: str = ""
    old_tree: str | None = None  # set when the attribute existed there
    similar: str | None = None  # a NEW member with a close name or the same body

    def wording(self, q: Quote) -> str:
        attr = self.target.rsplit(".", 1)[-1]
        text = f"{q(self.name + ' = ' + self.target)} ({self.scope}) captures {q(attr)}, which "
        text += f"{q(self.container)} "
        text += (
            f"no longer has at {self.tree} (present at {self.old_tree})"
            if self.old_tree
            else f"does not define at {self.tree}"
        )
        return text + (f"; did it become {q(self.similar)}?" if self.similar else "")


@dataclass(frozen=True)
class SelfCallBroken(Record):
    code: ClassVar[str] = "RK305"
    owner: str = ident()  # the plugin class
    method: str = ident()  # the upstream method called on self
    positional: int = ident()
    keywords: tuple[str, ...] = ident()
    caller: str = ""  # the plugin method making the call
    state: str = "unbound"  # "unbound" | "removed"
    upstream: str = ""  # qualname at NEW (or the class, when removed)
    tree: str = ""
    problems: tuple[str, ...] = ()
    upstream_signature: str = ""
    old_tree: str | None = None
    old_signature: str | None = None
    renamed_to: str | None = None
    upstream_call: str | None = None  # how upstream itself calls it at NEW (path:line: text)

    def wording(self, q: Quote) -> str:
        call = q(f"self.{self.method}(...)")
        if self.state == "removed":
            text = (
                f"{q(self.caller)} calls {call}, but {q(self.upstream)} no longer has "
                f"{q(self.method)} at {self.tree}"
            )
            if self.old_tree:
                text += f" (defined at {self.old_tree}{': ' + q(self.old_signature) if self.old_signature else ''})"
            return text + (f"; renamed to {q(self.renamed_to)}?" if self.renamed_to else "")
        verb = "no longer binds" if self.old_signature else "does not bind"
        return (
            f"{q(self.caller)} calls {call}, which {verb} at {self.tree}: "
            f"{'; '.join(self.problems)}; {q(self.upstream)} now takes "
            f"{q(self.upstream_signature)}{_was(self.old_signature, self.old_tree, q)}"
            f"{_shown_by(self.upstream_call, q)}"
        )


@dataclass(frozen=True)
class DataclassFieldGone(Record):
    code: ClassVar[str] = "RK306"
    dataclass: str = ident()  # qualname at NEW
    fields: tuple[str, ...] = ident()  # the keywords that are no longer fields
    missing: tuple[str, ...] = ident(default=())  # new required fields not passed
    tree: str = ""
    new_fields: str = ""  # the generated signature at NEW
    old_tree: str | None = None
    old_fields: str | None = None
    upstream_call: str | None = None  # an upstream construction at NEW (path:line: text)

    def wording(self, q: Quote) -> str:
        name = self.dataclass.rsplit(".", 1)[-1]
        parts = []
        if self.fields:
            parts.append(
                "passes "
                + ", ".join(q(f) for f in self.fields)
                + (", no longer a field" if self.old_fields else ", not a field")
                + f" at {self.tree}"
            )
        if self.missing:
            parts.append("omits new required field " + ", ".join(q(f) for f in self.missing))
        text = f"{q(name + '(...)')} ({q(self.dataclass)}) " + " and ".join(parts)
        text += f"; its fields are now {q(self.new_fields)}"
        text += _was(self.old_fields, self.old_tree, q)
        return text + (
            f"; upstream builds it as {q(self.upstream_call)}" if self.upstream_call else ""
        )


@dataclass(frozen=True)
class SuperCallBroken(Record):
    code: ClassVar[str] = "RK307"
    owner: str = ident()  # the plugin subclass
    method: str = ident()  # the method called through super()
    positional: int = ident()
    keywords: tuple[str, ...] = ident()
    caller: str = ""
    base: str = ""  # the upstream base class, as imported
    upstream: str = ""  # what the call reaches at NEW
    tree: str = ""
    problems: tuple[str, ...] = ()
    upstream_signature: str = ""
    old_tree: str | None = None
    old_signature: str | None = None
    upstream_call: str | None = None

    def wording(self, q: Quote) -> str:
        verb = "no longer binds" if self.old_signature else "does not bind"
        return (
            f"{q(self.caller)} calls {q(f'super().{self.method}(...)')} on upstream "
            f"{q(self.base)}, which {verb} at {self.tree}: {'; '.join(self.problems)}; "
            f"{q(self.upstream)} now takes {q(self.upstream_signature)}"
            f"{_was(self.old_signature, self.old_tree, q)}{_shown_by(self.upstream_call, q)}"
        )


@dataclass(frozen=True)
class EnvsAttributeMissing(Record):
    code: ClassVar[str] = "RK308"
    name: str = ident()  # the vllm.envs attribute
    tree: str = ""
    read_as: str = ""  # the expression in plugin code
    old_tree: str | None = None  # set when it was defined there
    similar: str | None = None  # a NEW variable with a close name

    def wording(self, q: Quote) -> str:
        text = f"{q(self.read_as)} reads {q('vllm.envs.' + self.name)}, which "
        text += (
            f"was removed between {self.old_tree} and {self.tree}"
            if self.old_tree
            else f"{self.tree} does not define"
        )
        return text + (f"; closest at {self.tree}: {q(self.similar)}" if self.similar else "")


@dataclass(frozen=True)
class CopiedSubclassBodyDrift(Record):
    code: ClassVar[str] = "RK405"
    upstream: str = ident()  # qualname of the upstream method at NEW
    owner: str = ident()  # the plugin subclass
    method: str = ""
    base_version: str | None = None
    new_version: str | None = None
    similarity: float = 0.0
    removed: int = 0
    added: int = 0
    diff: str = ""

    def wording(self, q: Quote) -> str:
        return (
            f"{q(self.owner + '.' + self.method)} copies {q(self.upstream)} (similarity "
            f"{self.similarity:.2f} to its {self.base_version} body, no super() call), which "
            f"changed upstream between {self.base_version} and {self.new_version} "
            f"(-{self.removed}/+{self.added} lines)"
        )
