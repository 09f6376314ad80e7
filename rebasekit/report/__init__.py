"""Renderers for scan results: rich tables (default), versioned JSON, SARIF 2.1.0.

Renderers only read :class:`~rebasekit.scan.ScanResult`; the JSON shape is described
in ``SCHEMA.md`` next to this file and versioned by :data:`SCHEMA_VERSION`.
"""

from rebasekit.report.json_report import SCHEMA_VERSION, to_json
from rebasekit.report.sarif import to_sarif
from rebasekit.report.table import render_table

__all__ = ["SCHEMA_VERSION", "render_table", "to_json", "to_sarif"]
