"""SARIF 2.1.0 output: one rule per code in codes.py, one result per finding."""

from __future__ import annotations

import json
from typing import Any

from rebasekit import __version__
from rebasekit.codes import CODES
from rebasekit.findings import Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def to_sarif_dict(result) -> dict[str, Any]:
    rules = [{
        "id": c.code, "name": c.title,
        "shortDescription": {"text": c.title.replace("-", " ")},
        "fullDescription": {"text": c.explanation},
        "defaultConfiguration": {"level": _LEVEL[c.severity]},
    } for c in sorted(CODES.values(), key=lambda c: c.code)]
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for f in result.findings:
        text = f.message + (f"\nSuggestion: {f.suggestion}" if f.suggestion else "")
        res: dict[str, Any] = {
            "ruleId": f.code, "level": _LEVEL[f.severity], "message": {"text": text},
            "properties": {"drift": f.drift.value, **({"subject": str(f.details["subject"])} if "subject" in f.details else {})},
        }
        if f.code in index:
            res["ruleIndex"] = index[f.code]
        if f.plugin is not None:
            phys: dict[str, Any] = {"artifactLocation": {"uri": f.plugin.path, "uriBaseId": "PLUGINROOT"}}
            if f.plugin.line:
                phys["region"] = {"startLine": f.plugin.line}
            res["locations"] = [{"physicalLocation": phys}]
        if f.upstream is not None:
            rel = {"artifactLocation": {"uri": f.upstream.path, "uriBaseId": "UPSTREAMROOT"}}
            if f.upstream.line:
                rel["region"] = {"startLine": f.upstream.line}
            res["relatedLocations"] = [{"id": 1, "physicalLocation": rel,
                                        "message": {"text": f.upstream.symbol or f.upstream.path}}]
        results.append(res)
    root = str(result.corpus.root) if result.corpus else "."
    return {
        "$schema": SARIF_SCHEMA, "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "rebasekit", "version": __version__, "rules": rules,
                                "informationUri": "https://pypi.org/project/arctic-inference/"}},
            "originalUriBaseIds": {"PLUGINROOT": {"uri": "file://" + root.rstrip("/") + "/"}},
            "results": results,
        }],
    }


def to_sarif(result) -> str:
    return json.dumps(to_sarif_dict(result), indent=2)
