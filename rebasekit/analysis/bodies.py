"""Definition bodies: extract, fingerprint, compare and diff them across releases.

An override that *copies* an upstream method (instead of wrapping it) silently keeps
the old behaviour when upstream fixes that method. Detecting this needs three things:
the source of one definition in a file, a fingerprint that ignores formatting and
comments (so a re-wrap upstream is not drift), and a readable diff when it is drift.
"""

from __future__ import annotations

import ast
import difflib
import functools
import hashlib
from dataclasses import dataclass, field

from rebasekit.astutil import parse_shared, walk
from rebasekit.dedent import dedent

DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Definition:
    """One function/method/class as text: ``qualname`` within its module, 1-based lines."""

    qualname: str
    kind: str  # "function" | "class"
    lineno: int  # first line, decorators included
    end_lineno: int
    node: DefNode
    # the lines of the file it is in (shared by every definition of that file)
    file_lines: list[str] = field(repr=False, compare=False)

    @functools.cached_property
    def source(self) -> str:
        """Dedented text of the whole definition.

        Made on first use: a file's table holds every definition in it, and most callers
        read one or two of them (a warm scan dedented 1,234 definitions to read 229).
        """
        return dedent("".join(self.file_lines[self.lineno - 1 : self.end_lineno]))

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.node)


def _start(node: DefNode) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def definitions(
    source: str, *, nested: bool = True, tree: ast.Module | None = None
) -> dict[str, Definition]:
    """Every top-level definition (and, with ``nested``, methods of classes) by qualname.

    ``tree`` is ``source`` already parsed (the plugin corpus keeps one), else the parse
    shared by content is used (upstream files are read by several checks).
    """
    tree = tree if tree is not None else parse_shared(source)
    lines = source.splitlines(keepends=True)
    out: dict[str, Definition] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            qual = prefix + node.name
            start, end = _start(node), node.end_lineno or node.lineno
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            if qual not in out:
                out[qual] = Definition(qual, kind, start, end, node, lines)
            if nested and isinstance(node, ast.ClassDef):
                visit(node.body, qual + ".")

    visit(tree.body, "")
    return out


def _docstring_free_body(node: ast.AST) -> list[ast.stmt] | None:
    """The body without its docstring (``[Pass]`` if nothing else), or None if it has none."""
    body = getattr(node, "body", None)
    if (
        isinstance(body, list)
        and body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[1:] or [ast.Pass()]
    return None


def fingerprint(node: ast.AST) -> str:
    """Hash of the definition's syntax tree, blind to formatting, comments and docstrings.

    Docstrings are cut out in place and put back afterwards: deep-copying every compared
    tree cost more than the rest of the mirrored-body check together.
    """
    saved: list[tuple[ast.AST, list[ast.stmt]]] = []
    for sub in walk(node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            stripped = _docstring_free_body(sub)
            if stripped is not None:
                saved.append((sub, sub.body))
    try:
        for sub, _body in saved:
            sub.body = _docstring_free_body(sub)  # type: ignore[attr-defined]
        dump = ast.dump(node, annotate_fields=False, include_attributes=False)
    finally:
        for sub, body in saved:
            sub.body = body  # type: ignore[attr-defined]
    return hashlib.sha256(dump.encode()).hexdigest()[:16]


def body_lines(defn: Definition) -> list[str]:
    """The body text of a definition without its ``def``/decorator lines, dedented."""
    node = defn.node
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(node.body) > 1:
        first = node.body[1]
    start = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))])
    offset = start - defn.lineno
    return dedent("".join(defn.source.splitlines(keepends=True)[offset:])).splitlines()


def similarity(a: Definition, b: Definition) -> float:
    """How much of two bodies is shared, 0..1, by lines with whitespace stripped."""
    return lines_similarity(body_lines(a), body_lines(b))


def lines_similarity(a: list[str], b: list[str]) -> float:
    """:func:`similarity` of two bodies given as their :func:`body_lines`."""
    la = [ln.strip() for ln in a if ln.strip() and not ln.strip().startswith("#")]
    lb = [ln.strip() for ln in b if ln.strip() and not ln.strip().startswith("#")]
    if not la or not lb:
        return 0.0
    return difflib.SequenceMatcher(None, la, lb, autojunk=False).ratio()


def unified(old: str, new: str, old_label: str, new_label: str, context: int = 3) -> str:
    """A plain unified diff of two texts ('' when equal)."""
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=old_label,
            tofile=new_label,
            n=context,
        )
    )


def changed_lines(old: str, new: str) -> tuple[int, int]:
    """(lines removed, lines added) between two texts, for one-line summaries."""
    removed = added = 0
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), n=0, lineterm="")
    for line in list(diff)[2:]:  # after the two file headers; a text line may start with "---"
        if line.startswith("-"):
            removed += 1
        elif line.startswith("+"):
            added += 1
    return removed, added
