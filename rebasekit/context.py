"""What every check receives: one frozen record of everything a scan reads.

It is made once, at the edge (:mod:`rebasekit.load`), and never changed afterwards: the
checks are pure functions of it. Vocabulary, used the same way everywhere:

* ``new`` — the tree being scanned (``--to``, ``--vllm``, ``--vllm-version``, ``--vllm-git``);
* ``old`` — the tree findings are classified against (``--from``): a finding also present
  at ``old`` is *preexisting*, otherwise *new*;
* ``base`` — the tree upstream *bodies* are compared with (RK303/RK304/RK402): ``old``
  when given, else the pin recorded in the plugin's lock, else none.

``origins`` says where each tree came from and why it was chosen; ``degradations``
lists what the loaders could not read, so an incomplete scan is never reported clean.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rebasekit.analysis.forkdecl import ForkInputs
from rebasekit.corpus.models import PluginCorpus
from rebasekit.degradation import Degradation
from rebasekit.findings import Finding, Location, Severity
from rebasekit.index import CodeIndex, Symbol
from rebasekit.records import Record, finding_of


@dataclass(frozen=True)
class ScanConfig:
    """Options that change what checks report (not which checks run)."""

    upstream_package: str = "vllm"


@dataclass(frozen=True)
class TreeOrigin:
    """Where one tree of the scan came from: its ``role``, the spec and the reason."""

    role: str  # "new" | "old" | "base" | "fork"
    label: str
    spec: str | None  # what it was opened from (folder, X.Y.Z, REPO@REF); None: given ready-made
    reason: str  # the flag that named it (``--to``), "lock pin", "fork declaration", "given"


@dataclass(frozen=True)
class ScanContext:
    corpus: PluginCorpus
    new: CodeIndex
    old: CodeIndex | None = None
    base: CodeIndex | None = None
    forks: ForkInputs = field(default_factory=ForkInputs)
    config: ScanConfig = field(default_factory=ScanConfig)
    origins: tuple[TreeOrigin, ...] = ()
    # What the loaders could not read (e.g. the lock's pin); see rebasekit.completeness.
    degradations: tuple[Degradation, ...] = ()

    def at_old(self) -> ScanContext:
        """The same scan with ``old`` as the scanned tree: what was already true at OLD.

        There is no ``base`` at OLD: OLD *is* where body drift is measured from, and
        measuring it against the lock would report the lock-to-OLD change as if it had
        already existed at OLD.
        """
        if self.old is None:
            raise ValueError("no OLD tree in this scan")
        return ScanContext(
            self.corpus, self.old, None, None, self.forks, self.config, self.origins, ()
        )

    def plugin_loc(self, relpath: str, line: int | None, symbol: str | None = None) -> Location:
        return Location(relpath, line, None, symbol)

    @staticmethod
    def upstream_loc(sym: Symbol | None) -> Location | None:
        if sym is None:
            return None
        return Location(sym.relpath, sym.lineno, None, sym.qualname)

    def report(
        self,
        record: Record,
        *,
        plugin: Location | None = None,
        upstream: Location | None = None,
        suggestion: str | None = None,
        severity: Severity | None = None,
    ) -> Finding:
        """The :class:`Finding` of ``record``, with its code's severity (unless overridden)."""
        return finding_of(
            record, plugin=plugin, upstream=upstream, suggestion=suggestion, severity=severity
        )
