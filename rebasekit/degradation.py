"""What made an analysis incomplete, so that it is never reported as clean.

Loaders (trees, the code index, the plugin corpus, the lock, git history) record a
:class:`Degradation` wherever they had to skip or give up on something instead of
raising; the report shows every one of them and the exit-code policy turns them into
"incomplete" (exit 2) unless the user explicitly allows an incomplete analysis.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Degradation:
    """One thing the analysis could not look at, and what the user can do about it."""

    kind: str  # stable slug, e.g. "file-skipped", "file-unparsed", "lock-unusable"
    subject: str  # the path, tree or name it concerns
    message: str  # one line: what happened
    fix: str  # one line: how to make the analysis complete

    def render(self) -> str:
        return f"{self.subject}: {self.message} (fix: {self.fix})"
