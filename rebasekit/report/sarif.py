"""SARIF 2.1.0 output: one rule per code in codes.py, one result per finding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rebasekit import __version__
from rebasekit.codes import CODES
from rebasekit.findings import Severity
from rebasekit.report.patches import patch_document

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _relative_uri(path: str) -> str:
    """A relative path as a URI reference: spaces and other reserved characters encoded."""
    return quote(path.replace("\\", "/"), safe="/")


def _folder_uri(folder: str) -> str:
    return Path(folder).resolve().as_uri().rstrip("/") + "/"


def _base_ids(result, used: set[str]) -> dict[str, Any]:
    """Every ``uriBaseId`` the results use, declared (an undeclared one is an invalid log)."""
    bases: dict[str, Any] = {}
    if "PLUGINROOT" in used or result.corpus:
        root = str(result.corpus.root) if result.corpus else "."
        bases["PLUGINROOT"] = {
            "uri": _folder_uri(root),
            "description": {"text": "folder holding the plugin package"},
        }
    if "UPSTREAMROOT" in used or result.new_label:
        entry: dict[str, Any] = {"description": {"text": f"upstream tree {result.new_label}"}}
        if result.new_root:
            entry["uri"] = _folder_uri(result.new_root)
        bases["UPSTREAMROOT"] = entry
    return bases


def _invocation(result) -> dict[str, Any]:
    notes = [
        {
            "level": "warning",
            "descriptor": {"id": d.kind},
            "message": {"text": f"{d.subject}: {d.message}"},
            "properties": {"fix": d.fix, "subject": d.subject},
        }
        for d in result.degradations
    ]
    return {"executionSuccessful": not result.degradations, "toolExecutionNotifications": notes}


def to_sarif_dict(result) -> dict[str, Any]:
    rules = [
        {
            "id": c.code,
            "name": c.title,
            "shortDescription": {"text": c.title.replace("-", " ")},
            "fullDescription": {"text": c.explanation},
            "defaultConfiguration": {"level": _LEVEL[c.severity]},
        }
        for c in sorted(CODES.values(), key=lambda c: c.code)
    ]
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for f in result.findings:
        tail = f"\nSuggestion: {f.suggestion}" if f.suggestion else ""
        res: dict[str, Any] = {
            "ruleId": f.code,
            "level": _LEVEL[f.severity],
            "message": {
                "text": f.explain("sarif") + tail,
                "markdown": f.explain("markdown") + tail,
            },
            "properties": {
                "drift": f.drift.value,
                **({"subject": str(f.details["subject"])} if "subject" in f.details else {}),
            },
        }
        if f.code in index:
            res["ruleIndex"] = index[f.code]
        if f.plugin is not None:
            phys: dict[str, Any] = {
                "artifactLocation": {"uri": _relative_uri(f.plugin.path), "uriBaseId": "PLUGINROOT"}
            }
            if f.plugin.line:
                phys["region"] = {"startLine": f.plugin.line}
            res["locations"] = [{"physicalLocation": phys}]
        if f.upstream is not None:
            rel = {
                "artifactLocation": {
                    "uri": _relative_uri(f.upstream.path),
                    "uriBaseId": "UPSTREAMROOT",
                }
            }
            if f.upstream.line:
                rel["region"] = {"startLine": f.upstream.line}
            res["relatedLocations"] = [
                {
                    "id": 1,
                    "physicalLocation": rel,
                    "message": {"text": f.upstream.symbol or f.upstream.path},
                }
            ]
        results.append(res)
    used = {
        loc["physicalLocation"]["artifactLocation"]["uriBaseId"]
        for res in results
        for loc in res.get("locations", []) + res.get("relatedLocations", [])
    }
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "rebasekit",
                        "version": __version__,
                        "rules": rules,
                        "informationUri": "https://pypi.org/project/arctic-inference/",
                    }
                },
                "originalUriBaseIds": _base_ids(result, used),
                "invocations": [_invocation(result)],
                "properties": {
                    "plugin": result.plugin_dir,
                    "patches": patch_document(result),
                    "upstream": {
                        "to": {
                            "label": result.new_label,
                            "version": result.new_version,
                            "source": result.new_source,
                        },
                        "from": (
                            {
                                "label": result.old_label,
                                "version": result.old_version,
                                "source": result.old_source,
                            }
                            if result.old_label
                            else None
                        ),
                    },
                },
                "results": results,
            }
        ],
    }


def to_sarif(result) -> str:
    return json.dumps(to_sarif_dict(result), indent=2)
