"""The ``--json`` document (see SCHEMA.md); bump SCHEMA_VERSION on any breaking change."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from typing import Any

from rebasekit import __version__
from rebasekit.report.patches import patch_document

SCHEMA_VERSION = 3


def _tree(
    label: str | None, version: str | None, source: str | None, root: str | None
) -> dict[str, Any] | None:
    if label is None:
        return None
    return {"label": label, "version": version, "source": source, "root": root}


def to_document(result) -> dict[str, Any]:
    counts = Counter(f.severity.value for f in result.findings)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "rebasekit", "version": __version__},
        "plugin": result.plugin_dir,
        "upstream": {
            "to": _tree(result.new_label, result.new_version, result.new_source, result.new_root),
            "from": _tree(result.old_label, result.old_version, result.old_source, result.old_root),
            "origins": [asdict(o) for o in result.origins],
        },
        "complete": result.complete,
        "degradations": [asdict(d) for d in result.degradations],
        "summary": {
            "findings": len(result.findings),
            "suppressed": len(result.suppressed),
            "by_severity": dict(sorted(counts.items())),
            "degradations": len(result.degradations),
            "patches": patch_document(result),
        },
        "findings": [f.to_dict() for f in result.findings],
    }


def to_json(result) -> str:
    return json.dumps(to_document(result), indent=2, sort_keys=False)
