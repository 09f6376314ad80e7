"""The ``--json`` document (see SCHEMA.md); bump SCHEMA_VERSION on any breaking change."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from rebasekit import __version__

SCHEMA_VERSION = 1


def to_document(result) -> dict[str, Any]:
    counts = Counter(f.severity.value for f in result.findings)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "rebasekit", "version": __version__},
        "plugin": str(result.corpus.root / result.corpus.package) if result.corpus else None,
        "upstream": {"to": {"label": result.new_label, "version": result.new_version},
                     "from": ({"label": result.old_label, "version": result.old_version}
                              if result.old_label else None)},
        "summary": {"findings": len(result.findings), "suppressed": len(result.suppressed),
                    "by_severity": dict(sorted(counts.items()))},
        "findings": [f.to_dict() for f in result.findings],
    }


def to_json(result) -> str:
    return json.dumps(to_document(result), indent=2, sort_keys=False)
