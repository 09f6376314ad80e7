"""``--record results.json``: what actually happened in each phase, for the results column.

Accepted shapes, keyed by phase key (``smoke``, ``cpu-unit``, ``gpu-unit``,
``e2e:<feature>``, ``serving``)::

    {"phases": {"smoke": {"status": "pass", "note": "loaded in 2 s"}, "cpu-unit": "fail"}}
    {"smoke": "pass", ...}                   # the same, without the wrapper
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rebasekit.errors import InputError

STATUSES = ("pass", "fail", "skip", "blocked")


@dataclass(frozen=True)
class Result:
    status: str
    note: str = ""

    def render(self) -> str:
        mark = {"pass": "✅ pass", "fail": "❌ fail", "skip": "⏭ skip", "blocked": "⛔ blocked"}[
            self.status
        ]
        return f"{mark}: {self.note}" if self.note else mark


def parse_results(data: object, phase_keys: list[str], where: str) -> dict[str, Result]:
    """Validate recorded results against the plan's phase keys."""
    table = data.get("phases", data) if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise InputError(f"{where}: expected an object of phase results")
    results: dict[str, Result] = {}
    for key, value in table.items():
        if key not in phase_keys:
            raise InputError(
                f"{where}: no phase {key!r} in this runbook",
                hint="phases: " + ", ".join(phase_keys),
            )
        status, note = (
            (value, "")
            if isinstance(value, str)
            else (
                (value.get("status"), str(value.get("note", "")))
                if isinstance(value, dict)
                else (None, "")
            )
        )
        if status not in STATUSES:
            raise InputError(
                f"{where}: phase {key!r} has status {status!r}",
                hint="use one of " + ", ".join(STATUSES),
            )
        results[key] = Result(status, note)
    return results


def load_results(path: Path, phase_keys: list[str]) -> dict[str, Result]:
    if not path.is_file():
        raise InputError(f"results file {path} does not exist")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})",
            hint="save the results file as UTF-8 JSON",
        ) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not valid JSON: {exc}", hint="fix the JSON of the results file"
        ) from None
    return parse_results(data, phase_keys, str(path))
