"""Run the registered checks, then filter, suppress and classify drift.

``run_scan`` is the analysis entry point (pure: a frozen context in, findings out);
``scan_plugin`` is the convenience front door used by commands and other tools:
give it a plugin folder and tree specs, it loads the context (:mod:`rebasekit.load`)
and returns a :class:`ScanResult`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rebasekit import completeness, suppress
from rebasekit.checks.registry import Check, all_checks, code_selected
from rebasekit.context import ScanConfig, ScanContext, TreeOrigin
from rebasekit.corpus import (
    check_plugin_dir,
    configured_patch_bases,
    declared_subpackage_pins,
    default_plugin_dir,
    platform_entry_points,
)
from rebasekit.corpus.models import PluginCorpus
from rebasekit.corpus.store import cached_corpus
from rebasekit.corpus.subpins import only, other_pins
from rebasekit.degradation import Degradation
from rebasekit.errors import RebasekitError
from rebasekit.findings import Drift, Finding, Severity
from rebasekit.index import CodeIndex
from rebasekit.index.cache import DataStore
from rebasekit.load import TreeInput, scan_context
from rebasekit.paths import corpus_dir
from rebasekit.records import UnusedSuppression

_SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass
class ScanResult:
    findings: list[Finding]
    suppressed: list[Finding] = field(default_factory=list)
    corpus: PluginCorpus | None = None
    new_label: str = ""
    new_version: str | None = None
    old_label: str | None = None
    old_version: str | None = None
    checks: list[str] = field(default_factory=list)
    # Everything the analysis could not look at: a non-empty list means "incomplete".
    degradations: list[Degradation] = field(default_factory=list)
    new_source: str | None = None  # the spec the NEW tree was opened from (folder, X.Y.Z, REPO@REF)
    old_source: str | None = None
    new_root: str | None = None  # the folder holding the NEW tree's package, when it is one
    old_root: str | None = None
    origins: tuple[TreeOrigin, ...] = ()  # every tree the scan read, with why it was chosen

    @property
    def plugin_dir(self) -> str | None:
        return str(self.corpus.root / self.corpus.package) if self.corpus else None

    @property
    def complete(self) -> bool:
        return not self.degradations

    @property
    def exit_code(self) -> int:
        """The contract's code without ``--allow-incomplete``: 2 incomplete, 1 findings, 0 clean."""
        return 2 if self.degradations else 1 if self.findings else 0


def selected_checks(select: Iterable[str] = (), ignore: Iterable[str] = ()) -> list[Check]:
    return [c for c in all_checks() if any(code_selected(code, select, ignore) for code in c.codes)]


def _run_checks(ctx: ScanContext, checks: list[Check], select, ignore) -> list[Finding]:
    found: list[Finding] = []
    for check in checks:
        for finding in check.func(ctx):
            if code_selected(finding.code, select, ignore):
                found.append(finding)
    return _dedupe(found)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in findings:
        ident = (f.code, f.plugin, f.message)
        if ident not in seen:
            seen.add(ident)
            out.append(f)
    return out


def _keys_at_old(
    ctx: ScanContext, checks: list[Check], findings: list[Finding], select, ignore
) -> set[tuple]:
    """Identities the per-tree checks that fired at NEW also produce at OLD."""
    found_codes = {f.code for f in findings}
    per_tree = [c for c in checks if not c.pairwise and found_codes & set(c.codes)]
    if ctx.old is ctx.new:
        codes = {code for c in per_tree for code in c.codes}
        return {f.key() for f in findings if f.code in codes}
    return {f.key() for f in _run_checks(ctx.at_old(), per_tree, select, ignore)}


def sort_key(f: Finding):
    path = f.plugin.path if f.plugin else ""
    line = (f.plugin.line or 0) if f.plugin else 0
    return (path, line, _SEVERITY_ORDER[f.severity], f.code, f.message)


def run_scan(
    ctx: ScanContext, select: Iterable[str] = (), ignore: Iterable[str] = ()
) -> ScanResult:
    """All selected checks at ``ctx.new``; with ``ctx.old`` each finding gets a drift verdict.

    Every selected check is evaluated once with ``ctx`` (NEW, with its base). With an OLD
    tree, a per-tree check that found something at NEW is evaluated once more, at OLD
    (:meth:`ScanContext.at_old`); a check that found nothing at NEW is not, since no
    finding of it needs a verdict. A NEW finding whose identity (:meth:`Finding.key`: the
    plugin place and the record's declared identity fields, never wording or lines) also
    exists at OLD is preexisting, else new. A pairwise check compared OLD (or the base)
    with NEW in its one evaluation; its findings are new by construction. When OLD is the
    very index scanned as NEW, the NEW results stand for OLD and nothing is re-evaluated.
    """
    select, ignore = tuple(select), tuple(ignore)
    checks = selected_checks(select, ignore)
    findings = _run_checks(ctx, checks, select, ignore)
    if ctx.old is not None:
        old_keys = _keys_at_old(ctx, checks, findings, select, ignore)
        for f in findings:
            f.drift = Drift.PREEXISTING if f.key() in old_keys else Drift.NEW
    sups = suppress.collect(ctx.corpus)
    kept, dropped = suppress.apply(findings, sups)
    if not select and not ignore:
        for sup in sups:
            if sup.used == 0:
                kept.append(
                    ctx.report(
                        UnusedSuppression(tuple(sup.codes)),
                        plugin=ctx.plugin_loc(sup.relpath, sup.line),
                        suggestion="remove the comment",
                    )
                )
    kept.sort(key=sort_key)
    degradations = completeness.unique(
        [
            *completeness.recorded(
                ctx.corpus, ctx.new.tree, ctx.new, *((ctx.old.tree, ctx.old) if ctx.old else ())
            ),
            *completeness.patch_base_problems(ctx.corpus),
            *ctx.degradations,
            *completeness.unparsed_modules(ctx.new),
            *(completeness.unparsed_modules(ctx.old) if ctx.old else ()),
            *(
                completeness.unparsed_modules(ctx.base)
                if ctx.base is not None and ctx.base is not ctx.old
                else ()
            ),
        ]
    )
    return ScanResult(
        kept,
        dropped,
        ctx.corpus,
        ctx.new.tree.label,
        ctx.new.tree.version,
        ctx.old.tree.label if ctx.old else None,
        ctx.old.tree.version if ctx.old else None,
        [c.name for c in checks],
        degradations,
        new_root=_root(ctx.new),
        old_root=_root(ctx.old),
        origins=ctx.origins,
    )


def _root(index: CodeIndex | None) -> str | None:
    root = getattr(index.tree, "root", None) if index is not None else None
    return str(root) if root else None


def load_corpus(
    plugin: Path | None = None,
    patch_bases: Iterable[str] | None = None,
    upstream_package: str = "vllm",
) -> PluginCorpus:
    """The corpus of ``plugin`` (default: the project's configured plugin)."""
    plugin_dir = check_plugin_dir(plugin) if plugin is not None else default_plugin_dir()
    bases = tuple(patch_bases or ()) or configured_patch_bases(plugin_dir)
    return cached_corpus(
        DataStore(corpus_dir()),
        plugin_dir,
        bases,
        upstream_package,
        platform_entry_points(plugin_dir),
        declared_subpackage_pins(plugin_dir, upstream_package),
    )


def scan_plugin(
    new: TreeInput,
    *,
    old: TreeInput | None = None,
    plugin: Path | None = None,
    patch_bases: Iterable[str] | None = None,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    upstream_package: str = "vllm",
    corpus: PluginCorpus | None = None,
    new_reason: str = "given",
    old_reason: str = "given",
    pin_trees: dict[str, TreeInput] | None = None,
) -> ScanResult:
    """Scan a plugin against the NEW tree (and classify drift against the OLD one).

    Trees may be specs (folder, ``X.Y.Z``, ``REPO@REF``), trees or ready indexes; the
    reasons say which option named them (shown as each tree's origin). A sub-package
    that declares its own pin is scanned against that release's tree (``pin_trees[pin]``
    when given, else the release itself, fetched).
    Raises :class:`~rebasekit.errors.RebasekitError` subclasses for bad input.
    """
    select, ignore = tuple(select), tuple(ignore)
    corpus = corpus or load_corpus(plugin, patch_bases, upstream_package)
    needs = {n for check in selected_checks(select, ignore) for n in check.needs}
    ctx = scan_context(
        corpus,
        new,
        old,
        needs=needs,
        config=ScanConfig(upstream_package=upstream_package),
        new_reason=new_reason,
        old_reason=old_reason,
    )
    result = run_scan(ctx, select, ignore)
    result.new_source = new if isinstance(new, str) else None
    result.old_source = old if isinstance(old, str) else None
    for prefix, pin in other_pins(corpus, result.new_version).items():
        tree = (pin_trees or {}).get(pin, pin)
        _add_subpackage_scan(result, only(corpus, prefix), prefix, pin, tree, needs, select, ignore)
    return result


def _add_subpackage_scan(
    result: ScanResult,
    part: PluginCorpus,
    prefix: str,
    pin: str,
    tree: TreeInput,
    needs: set[str],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
) -> None:
    """Scan one sub-package against the tree of its own pin and fold it into ``result``.

    Its findings are the same before and after a bump of the main pin (its own pin is
    what it follows), so with an OLD tree they count as preexisting. When the tree cannot
    be opened the "not scanned" degradation stays: the analysis is incomplete.
    """
    name = prefix.rstrip("/")
    try:
        ctx = scan_context(
            part,
            tree,
            None,
            needs=needs,
            config=ScanConfig(upstream_package=part.upstream_package),
            new_reason=f"own pin of {name}",
        )
    except RebasekitError as exc:
        result.degradations = [
            *(
                d
                for d in result.degradations
                if (d.kind, d.subject) != ("subpackage-other-pin", name)
            ),
            Degradation(
                "subpackage-pin-unavailable",
                name,
                f"declares its own pin {part.upstream_package}=={pin}, whose tree could not be "
                f"opened ({str(exc).splitlines()[0]}), so it was not scanned",
                f"give its tree with --pin-tree {pin}=DIR, or pass --allow-incomplete",
            ),
        ]
        return
    sub = run_scan(ctx, select, ignore)
    if result.old_label is not None:
        for f in sub.findings:
            f.drift = Drift.PREEXISTING
    result.findings = sorted([*result.findings, *sub.findings], key=sort_key)
    result.suppressed.extend(sub.suppressed)
    skipped = [
        d for d in result.degradations if (d.kind, d.subject) == ("subpackage-other-pin", name)
    ]
    # whether the plugin's patches were found is a question of the whole plugin: the main
    # pass answered it; a sub-package may well hold no patch of its own
    whole_plugin = {"patch-bases-unmatched", "no-patches-found"}
    result.degradations = completeness.unique(
        [d for d in result.degradations if d not in skipped]
        + [d for d in sub.degradations if d.kind not in whole_plugin]
    )
    result.origins = (
        *result.origins,
        *(
            TreeOrigin("subpackage", o.label, o.spec, f"own pin of {name}")
            for o in sub.origins
            if o.role == "new"
        ),
    )
