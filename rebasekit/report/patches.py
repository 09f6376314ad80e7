"""How many patches a scan looked at and which discovery rule found them, for every renderer.

A scan that found few patches checks little; saying so next to the finding count keeps
a short report from reading as a clean bill of health.
"""

from __future__ import annotations

from typing import Any


def patch_document(result) -> dict[str, Any]:
    """``{"total", "attributes", "by_rule"}`` of the scanned corpus (zeros without one)."""
    corpus = getattr(result, "corpus", None)
    if corpus is None:
        return {"total": 0, "attributes": 0, "by_rule": {}}
    return {
        "total": len(corpus.patches),
        "attributes": sum(len(p.attributes) for p in corpus.patches),
        "by_rule": corpus.patch_counts(),
    }


def patch_text(result) -> str:
    """``23 patches (generic-base 18, assignment 5)``."""
    doc = patch_document(result)
    rules = ", ".join(f"{rule} {n}" for rule, n in doc["by_rule"].items())
    noun = "patch" if doc["total"] == 1 else "patches"
    return f"{doc['total']} {noun}" + (f" ({rules})" if rules else "")
