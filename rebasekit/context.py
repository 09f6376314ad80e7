"""What every check receives: the plugin corpus and the upstream index(es).

Checks compare the corpus against ``new`` (the tree being scanned). ``old`` is only
there for checks that need history (moved/renamed/deleted names); drift classification
itself is done by ``run_scan``, which re-runs the checks with ``old`` as ``new``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rebasekit import codes
from rebasekit.corpus.models import PluginCorpus
from rebasekit.degradation import Degradation
from rebasekit.findings import Finding, Location
from rebasekit.index import CodeIndex, Symbol


@dataclass
class ScanConfig:
    """Options that change what checks report (not which checks run)."""

    upstream_package: str = "vllm"
    # Without ``--from``, drift checks measure from the lock's pin. The OLD side of a
    # ``--from/--to`` scan must not: there, OLD *is* the base, and measuring it against the
    # lock would report the lock-to-OLD change as if it had already existed at OLD.
    lock_base: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ScanContext:
    corpus: PluginCorpus
    new: CodeIndex
    old: CodeIndex | None = None
    config: ScanConfig = field(default_factory=ScanConfig)
    # What the checks could not look at (e.g. the lock's base tree); see rebasekit.completeness.
    degradations: list[Degradation] = field(default_factory=list)

    def plugin_loc(self, relpath: str, line: int | None, symbol: str | None = None) -> Location:
        return Location(relpath, line, None, symbol)

    @staticmethod
    def upstream_loc(sym: Symbol | None) -> Location | None:
        if sym is None:
            return None
        return Location(sym.relpath, sym.lineno, None, sym.qualname)

    def finding(
        self,
        code: str,
        message: str,
        *,
        plugin: Location | None = None,
        upstream: Location | None = None,
        suggestion: str | None = None,
        subject: str | None = None,
        severity=None,
        **details: Any,
    ) -> Finding:
        """A :class:`Finding` with the code's registered severity (unless overridden)."""
        if subject is not None:
            details["subject"] = subject
        return Finding(
            code=code,
            severity=severity or codes.get(code).severity,
            message=message,
            plugin=plugin,
            upstream=upstream,
            suggestion=suggestion,
            details=details,
        )
