"""The one data model every rebasekit check produces.

Checks are pure: inputs in, a list of :class:`Finding` out. Renderers (table, JSON,
SARIF) and the exit-code policy only ever see this model, so a new check needs no
output code of its own.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any


class Severity(str, enum.Enum):
    """How bad a finding is; ``error`` means the plugin will break at import or run time."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Drift(str, enum.Enum):
    """With ``--from OLD --to NEW``: did the mismatch appear between the two pins?"""

    NEW = "new"  # clean at OLD, broken at NEW
    PREEXISTING = "preexisting"  # already a mismatch at OLD
    UNKNOWN = "unknown"  # no OLD tree given


@dataclass(frozen=True)
class Location:
    """A place in plugin code or in an upstream tree (paths are relative to the tree root)."""

    path: str
    line: int | None = None
    column: int | None = None
    symbol: str | None = None  # dotted name of the definition at this place, if any

    def render(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where} ({self.symbol})" if self.symbol else where


@dataclass
class Finding:
    """One piece of drift between the plugin and an upstream tree.

    ``code`` is stable across releases (documented in ``rebasekit/codes.py``); ``message``
    says what changed upstream, ``suggestion`` says what to do about it.
    """

    code: str
    severity: Severity
    message: str
    plugin: Location | None = None
    upstream: Location | None = None
    suggestion: str | None = None
    drift: Drift = Drift.UNKNOWN
    details: dict[str, Any] = field(default_factory=dict)

    def key(self) -> tuple[str, str, int, str]:
        """Identity used to match a finding at OLD with the same finding at NEW."""
        path = self.plugin.path if self.plugin else ""
        symbol = (self.plugin.symbol if self.plugin else None) or ""
        return (self.code, path, 0, symbol + "|" + str(self.details.get("subject", "")))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["severity"] = self.severity.value
        data["drift"] = self.drift.value
        return data
