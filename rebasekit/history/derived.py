"""Ledger rows derived from the patch corpus, for plugins that keep no probe file.

For every upstream surface the plugin patches (at any column), one row holds that
member's upstream signature at each column's pin; for a mirrored override (a patch
method that copies the upstream body instead of calling the original) a second row holds
the upstream body's fingerprint. A cell changes exactly when vLLM moved what the plugin
relies on, so the STALLED / VANISHED / REVERTED flags apply to these rows as to any probe.

Upstream trees are opened per pin through :mod:`rebasekit.upstream` (a release is
downloaded once into the cache) or taken from ``--tree PIN=SPEC``; a pin whose tree
cannot be opened leaves its cells missing and the ledger incomplete, never "unchanged".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rebasekit.analysis.bodies import similarity
from rebasekit.analysis.overrides import (
    MIRROR_THRESHOLD,
    member_fingerprint,
    override_member,
    plugin_definitions,
    symbol_definition,
)
from rebasekit.corpus.models import PluginCorpus
from rebasekit.degradation import Degradation
from rebasekit.errors import RebasekitError
from rebasekit.history.columns import Column
from rebasekit.history.probes import Cell, Probe
from rebasekit.history.surfaces import Surface, snapshot_corpus, surfaces
from rebasekit.index import CodeIndex
from rebasekit.upstream.spec import open_tree

SIGNATURE = "upstream-signature"
BODY = "upstream-body"
DERIVED_KINDS = (SIGNATURE, BODY)
FINGERPRINT_WIDTH = 12


@dataclass(frozen=True)
class DeriveSpec:
    """Which package is the plugin, what marks a patch, and trees given for some pins."""

    package: str
    patch_bases: tuple[str, ...]
    trees: dict[str, str] = field(default_factory=dict)  # pin -> tree spec (folder, REPO@REF)
    upstream_package: str = "vllm"


class UpstreamAt:
    """One code index per pin, opened on first use; failures become degradations."""

    def __init__(self, spec: DeriveSpec, opener: Callable[[str, str], object] = open_tree) -> None:
        self.spec = spec
        self._open = opener
        self._indexes: dict[str, CodeIndex | None] = {}
        self.degradations: list[Degradation] = []

    def index(self, pin: str | None) -> CodeIndex | None:
        if pin is None:
            return None
        if pin not in self._indexes:
            where = self.spec.trees.get(pin, pin)
            try:
                tree = self._open(where, self.spec.upstream_package)
                self._indexes[pin] = CodeIndex(tree)  # type: ignore[arg-type]
            except RebasekitError as exc:
                self._indexes[pin] = None
                self.degradations.append(
                    Degradation(
                        "upstream-unavailable",
                        f"{self.spec.upstream_package} {pin}",
                        f"the upstream tree for pin {pin} could not be opened ({exc.message}); "
                        "its derived cells are missing",
                        f"pass --tree {pin}=FOLDER (or REPO@REF), or check the network and the cache",
                    )
                )
        return self._indexes[pin]


def _pin(column: Column) -> str | None:
    return column.pin.version if column.pin else None


def column_corpora(columns: list[Column], spec: DeriveSpec) -> dict[str, PluginCorpus]:
    """Column id -> the plugin's corpus in that column (columns without the package left out)."""
    out: dict[str, PluginCorpus] = {}
    for column in columns:
        snap = column.snapshot
        corpus = snapshot_corpus(
            snap.python_files, snap.read, spec.package, spec.patch_bases, spec.upstream_package
        )
        if corpus is not None:
            out[column.cid] = corpus
    return out


def _mirrors(surface: Surface, corpus: PluginCorpus, index: CodeIndex | None) -> bool:
    """Whether the override copies the upstream body it replaces (and calls no original)."""
    if index is None or not surface.overrides or surface.calls_orig:
        return False
    ours = plugin_definitions(corpus, surface.relpath).get(f"{surface.patch}.{surface.attr}")
    upstream = override_member(index, None, surface.attr, target=surface.target)
    theirs = symbol_definition(upstream) if upstream is not None else None
    return ours is not None and theirs is not None and similarity(ours, theirs) >= MIRROR_THRESHOLD


def _labels(found: list[Surface]) -> dict[str, str]:
    """Short row names (``Class.attr``); the full dotted name where two would clash."""
    short = {s.dotted: f"{s.target.rsplit('.', 1)[-1]}.{s.attr}" for s in found}
    counts: dict[str, int] = {}
    for name in short.values():
        counts[name] = counts.get(name, 0) + 1
    return {k: (v if counts[v] == 1 else k) for k, v in short.items()}


def derive_probes(columns: list[Column], spec: DeriveSpec, upstream: UpstreamAt) -> list[Probe]:
    """One signature row per patched surface, and a body row per mirrored override."""
    corpora = column_corpora(columns, spec)
    seen: dict[str, tuple[Surface, PluginCorpus, Column]] = {}
    for column in columns:
        corpus = corpora.get(column.cid)
        for surface in surfaces(corpus) if corpus is not None else []:
            seen.setdefault(surface.dotted, (surface, corpus, column))  # type: ignore[arg-type]
    labels = _labels([s for s, _, _ in seen.values()])
    probes: list[Probe] = []
    for dotted, (surface, corpus, column) in seen.items():
        note = f"patched by {surface.patch} ({spec.package})"
        probes.append(Probe(f"sig {labels[dotted]}", SIGNATURE, dotted, note=note))
        if _mirrors(surface, corpus, upstream.index(_pin(column))):
            probes.append(Probe(f"body {labels[dotted]}", BODY, dotted, note=note + ", mirrored"))
    return probes


def _member(index: CodeIndex, dotted: str) -> tuple[object | None, str]:
    """The upstream function behind ``target.attr`` and, when absent, why."""
    target, _, attr = dotted.rpartition(".")
    if index.resolve(target) is None:
        return None, "no target"
    sym = override_member(index, None, attr, target=target)
    return (sym, "") if sym is not None else (None, "not upstream")


def derived_cell(probe: Probe, column: Column, upstream: UpstreamAt) -> Cell:
    """A derived probe's value in one column: read at the upstream tree of its pin."""
    pin = _pin(column)
    if pin is None:
        return Cell(None, "no pin")
    index = upstream.index(pin)
    if index is None:
        return Cell(None, "no vLLM tree")
    sym, why = _member(index, probe.target)
    if sym is None:
        return Cell(None, why)
    if probe.kind == SIGNATURE:
        fact = getattr(sym, "fact", None)
        signature = getattr(fact, "signature", None)
        if signature is None:
            return Cell(None, "no signature")
        name = probe.target.rsplit(".", 1)[-1]
        prefix = "async " if signature.is_async else ""
        return Cell(f"{prefix}{name}{signature.render()}")
    target, _, attr = probe.target.rpartition(".")
    fingerprint = member_fingerprint(index, target, attr)
    return Cell(fingerprint[:FINGERPRINT_WIDTH]) if fingerprint else Cell(None, "no body")
