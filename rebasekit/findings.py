"""The wire shape every rebasekit check produces.

Checks are pure: inputs in, a list of :class:`Finding` out. Each finding carries the
typed record it was made from (:mod:`rebasekit.records`: the declared fields of its
code, its identity, its wording per output style); renderers (table, JSON, SARIF,
markdown) and the exit-code policy only ever see this model, so a new check needs no
output code of its own.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field, replace
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
    record: Any = field(default=None, repr=False, compare=False)  # a rebasekit.records.Record

    def key(self) -> tuple[Any, ...]:
        """Identity used to match a finding at OLD with the same finding at NEW.

        The plugin place (file and definition: the plugin is the same at OLD and NEW)
        plus the record's declared identity fields; never line numbers or wording.
        """
        path = self.plugin.path if self.plugin else ""
        symbol = (self.plugin.symbol if self.plugin else None) or ""
        ident = self.record.identity() if self.record is not None else (self.message,)
        return (self.code, path, symbol, *ident)

    def with_reason(self, reason: str, key: str, value: Any) -> Finding:
        """A copy whose message ends with ``(reason)`` and whose details record ``key``.

        How a check says why this finding is weaker than its kind (a call site that never
        runs, a call dispatched elsewhere), in the text and in the JSON alike.
        """
        return replace(
            self, message=f"{self.message} ({reason})", details={**self.details, key: value}
        )

    def explain(self, style: Any = "text") -> str:
        """The message worded for ``style`` (see :class:`rebasekit.records.Style`)."""
        return self.record.explain(style) if self.record is not None else self.message

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("record")
        data["severity"] = self.severity.value
        data["drift"] = self.drift.value
        names = self.record.identity_fields() if self.record is not None else ()
        data["identity"] = {name: self.details.get(name) for name in names}
        return data
