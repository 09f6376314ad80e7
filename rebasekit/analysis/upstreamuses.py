"""Upstream's own calls of a method or constructor at one tree: the evidence for a change.

A finding that says "``execute_model`` no longer accepts this call" is easier to act on
with the line where upstream itself calls it the new way. The search is bounded to the
files that can plausibly hold such calls — the modules defining the class and its
in-tree bases, and their sibling modules in the same folder — so it costs a handful of
parses (cached by content) rather than a walk over the whole tree.
"""

from __future__ import annotations

import ast
import posixpath
from dataclasses import dataclass

from rebasekit.analysis.binding import CallShape, shape_of_call
from rebasekit.astutil import children, dotted, parse_text
from rebasekit.datacodec import record
from rebasekit.index import CodeIndex, Symbol
from rebasekit.index.cache import tree_memo

_MAX_FILES = 80  # folder siblings searched at most, per folder


@record
@dataclass(frozen=True)
class UpstreamUse:
    """One upstream call ``<receiver>.name(...)`` (or ``Name(...)``); cached per tree."""

    relpath: str
    line: int
    caller: str  # qualname of the enclosing function (module-relative)
    text: str
    receiver: str | None  # "self", another dotted receiver, None for a bare name
    positional: int
    keywords: tuple[str, ...]
    star_args: bool
    star_kwargs: bool

    @property
    def shape(self) -> CallShape:
        return CallShape(self.positional, self.keywords, self.star_args, self.star_kwargs)

    def render(self) -> str:
        return f"{self.relpath}:{self.line}: {self.text}"


@tree_memo
def _file_calls(index: CodeIndex, relpath: str) -> dict[str, list[UpstreamUse]]:
    """Every call in one upstream file, by the called name's last segment."""
    module = parse_text(index.text(relpath))
    out: dict[str, list[UpstreamUse]] = {}
    if module is None:
        return out

    def visit(node: ast.AST, scope: str) -> None:
        for child in children(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, f"{scope}.{child.name}" if scope else child.name)
                continue
            if isinstance(child, ast.Call):
                func = child.func
                name = receiver = None
                if isinstance(func, ast.Attribute):
                    name, receiver = func.attr, dotted(func.value) or "?"
                elif isinstance(func, ast.Name):
                    name = func.id
                if name is not None:
                    text = ast.unparse(child)
                    shape = shape_of_call(child)
                    use = UpstreamUse(
                        relpath,
                        child.lineno,
                        scope,
                        text if len(text) <= 160 else text[:157] + "...",
                        receiver,
                        shape.positional,
                        shape.keywords,
                        shape.star_args,
                        shape.star_kwargs,
                    )
                    out.setdefault(name, []).append(use)
            visit(child, scope)

    visit(module, "")
    return out


def search_files(index: CodeIndex, cls: Symbol) -> list[str]:
    """The files of ``cls`` and its in-tree bases, then their folder siblings (memoised)."""
    memo: dict[str, list[str]] = index.__dict__.setdefault("_use_files", {})
    if cls.qualname not in memo:
        memo[cls.qualname] = _search_files(index, cls)
    return memo[cls.qualname]


def _search_files(index: CodeIndex, cls: Symbol) -> list[str]:
    own: list[str] = []
    for klass in index.mro(cls):
        if klass.relpath not in own:
            own.append(klass.relpath)
    folders = {posixpath.dirname(p) for p in own}
    siblings = sorted(
        p for p in index.tree.iter_py_files() if posixpath.dirname(p) in folders and p not in own
    )
    return own + siblings[: _MAX_FILES * len(folders)]


def uses_of(
    index: CodeIndex, cls: Symbol, name: str, *, self_only: bool = False
) -> list[UpstreamUse]:
    """Upstream calls named ``name`` in the files of ``cls`` (``self.name(...)`` first)."""
    files = [cls.relpath] if self_only else search_files(index, cls)
    found: list[UpstreamUse] = []
    for relpath in files:
        if f"{name}(" in index.text(relpath):  # cheap text test before parsing
            found += _file_calls(index, relpath).get(name, [])
    if self_only:
        found = [u for u in found if u.receiver == "self"]
    return sorted(found, key=lambda u: (u.receiver != "self", u.relpath != cls.relpath))
