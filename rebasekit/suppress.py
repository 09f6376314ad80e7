"""Inline suppressions: ``# rebasekit: ignore[RK101,RK2] reason`` on a line or the line above.

Codes match by prefix, like ``--ignore``; a reason is encouraged but not required.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rebasekit.corpus.models import PluginCorpus
from rebasekit.findings import Finding

_PATTERN = re.compile(r"#\s*rebasekit:\s*ignore\[([^\]]*)\]\s*(.*)$")


@dataclass
class Suppression:
    relpath: str
    line: int
    codes: tuple[str, ...]
    reason: str
    used: int = field(default=0)


def collect(corpus: PluginCorpus) -> list[Suppression]:
    found = []
    for relpath, comments in corpus.comments.items():
        for line, text in comments.items():
            match = _PATTERN.search(text)
            if match:
                codes = tuple(c.strip() for c in match.group(1).split(",") if c.strip())
                found.append(Suppression(relpath, line, codes, match.group(2).strip()))
    return found


def apply(
    findings: list[Finding], suppressions: list[Suppression]
) -> tuple[list[Finding], list[Finding]]:
    """Split findings into (kept, suppressed)."""
    by_place: dict[tuple[str, int], list[Suppression]] = {}
    for sup in suppressions:
        by_place.setdefault((sup.relpath, sup.line), []).append(sup)
    kept, dropped = [], []
    for finding in findings:
        loc = finding.plugin
        hit = None
        if loc is not None and loc.line is not None:
            for line in (loc.line, loc.line - 1):
                for sup in by_place.get((loc.path, line), []):
                    if any(finding.code.startswith(c) for c in sup.codes):
                        hit = sup
                        break
                if hit:
                    break
        if hit is not None:
            hit.used += 1
            dropped.append(finding)
        else:
            kept.append(finding)
    return kept, dropped
