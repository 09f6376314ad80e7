"""Branches a plugin runs only on some vLLM releases, read from the ``if`` test.

Plugins that support several vLLM releases at once gate code on the version:
``if vllm_version_is("0.18.0"): ... else: ...`` or
``if Version(vllm.__version__) < Version("0.19.0"): ...``. Each such test becomes a
specifier (``<0.19.0``; several joined by commas) for its body and the negation for its ``else``; a scan at a pin skips
what the pin does not run. Tests that combine conditions (``and``/``or``) or compare
anything else give no gate: both branches are scanned, as before.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from packaging.version import InvalidVersion, Version

from rebasekit.astutil import dotted
from rebasekit.corpus.models import PluginCorpus

_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _version_literal(node: ast.expr) -> str | None:
    """``"0.19.0"`` from ``"0.19.0"`` or ``Version("0.19.0")`` / ``parse("0.19.0")``."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            Version(node.value)
        except InvalidVersion:
            return None
        return node.value
    return None


def _is_running_version(node: ast.expr) -> bool:
    """``vllm.__version__``, or it wrapped once: ``Version(vllm.__version__)``."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    name = dotted(node)
    return name is not None and name.endswith("__version__")


def gate(test: ast.expr) -> tuple[str, str] | None:
    """(specifier where the body runs, specifier where the ``else`` runs), or None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = gate(test.operand)
        return (inner[1], inner[0]) if inner else None
    if isinstance(test, ast.Call):
        name = dotted(test.func) or ""
        if name.split(".")[-1].endswith("version_is") and len(test.args) == 1:
            version = _version_literal(test.args[0])
            if version is not None:
                return f"=={version}", f"!={version}"
        return None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPS:
        op = _OPS[type(test.ops[0])]
        left, right = test.left, test.comparators[0]
        if _is_running_version(right) and not _is_running_version(left):
            left, right, op = right, left, _MIRRORED[op]
        version = _version_literal(right)
        if _is_running_version(left) and version is not None:
            return f"{op}{version}", f"{_NEGATED[op]}{version}"
    return None


def combine(outer: str | None, inner: str | None) -> str | None:
    """Both gates at once (a gated branch inside another)."""
    if outer is None or inner is None:
        return outer or inner
    return f"{outer},{inner}"


def node_gates(tree: ast.AST) -> dict[int, str]:
    """``id(node)`` -> the gate of every node inside a version-gated branch of ``tree``."""
    found: dict[int, str] = {}
    stack: list[tuple[ast.AST, str | None]] = [(tree, None)]
    while stack:  # iterative: a long expression chain would exhaust the recursion limit
        node, current = stack.pop()
        if current is not None:
            found[id(node)] = current
        branches = gate(node.test) if isinstance(node, ast.If) else None
        if isinstance(node, ast.If) and branches:
            stack.append((node.test, current))
            stack.extend((stmt, combine(current, branches[0])) for stmt in node.body)
            stack.extend((stmt, combine(current, branches[1])) for stmt in node.orelse)
            continue
        stack.extend((child, current) for child in ast.iter_child_nodes(node))
    return found


def at_version(corpus: PluginCorpus, version: str | None) -> PluginCorpus:
    """The corpus as it runs at ``version``: gated-out imports, calls, patch classes and
    patch members left out (unknown version: everything kept, as the plugin reads)."""
    if version is None:
        return corpus
    patches = []
    for patch in corpus.patches:
        if not runs_at(patch.version_gate, version):
            continue
        kept = [a for a in patch.attributes if runs_at(a.version_gate, version)]
        patches.append(
            patch if len(kept) == len(patch.attributes) else replace(patch, attributes=kept)
        )
    return replace(
        corpus,
        patches=patches,
        imports=[i for i in corpus.imports if runs_at(i.version_gate, version)],
        calls=[c for c in corpus.calls if runs_at(c.version_gate, version)],
    )


_COMPARE = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def runs_at(spec: str | None, version: str | None) -> bool:
    """Whether code under the gate ``spec`` runs at ``version`` (unknown: assume it runs).

    Compared the way the plugin's own test compares, with ``Version`` ordering (a
    pre-release of 0.19.0 is ``< 0.19.0``), not with PEP 440 specifier matching.
    """
    if spec is None or version is None:
        return True
    try:
        running = Version(version)
        for part in spec.split(","):
            op = part[:2] if part[:2] in _COMPARE else part[:1]
            if not _COMPARE[op](running, Version(part[len(op) :])):
                return False
    except (InvalidVersion, KeyError):
        return True
    return True
