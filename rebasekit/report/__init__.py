"""Renderers for scan results: rich tables (default), versioned JSON, SARIF 2.1.0.

Renderers only read :class:`~rebasekit.scan.ScanResult`; the JSON shape is described
in ``SCHEMA.md`` next to this file and versioned by :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import importlib
from typing import Any

# Each renderer is imported on first use: a --json run does not load rich for the table.
_WHERE = {
    "SCHEMA_VERSION": "json_report",
    "to_json": "json_report",
    "to_sarif": "sarif",
    "render_table": "table",
}

__all__ = ["SCHEMA_VERSION", "render_table", "to_json", "to_sarif"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
