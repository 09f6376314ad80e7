"""Checks over a plugin corpus and upstream indexes.

``CHECK_MODULES`` lists the modules whose ``@register_check`` functions make up a full
scan; add one line per new module (names relative to this package, or dotted).
"""

from rebasekit.checks.registry import Check, all_checks, code_selected, register_check

CHECK_MODULES: list[str] = [
    "meta",
    "imports",
    "targets",
    "signatures",
    "calls",
    "returns",
    "gone",
    "duties",
    "attributes",
    "bypass",
    "mirrored",
    "forks",
    "classcalls",
    "dataclasscalls",
    "envs",
    "captures",
    "callers",
    "copies",
    "configs",
    "shifts",
    "copiedsigs",
    "wrapped",
]

__all__ = ["CHECK_MODULES", "Check", "all_checks", "code_selected", "register_check"]
