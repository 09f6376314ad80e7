"""Small ``ast`` helpers shared by the corpus extractor, the deep checks and the probes.

They were written three times over (one per layer); one copy keeps their behaviour
identical everywhere, and the parse cache shared by all of them means a file that
several checks look at is parsed once per process.
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from collections import OrderedDict
from collections.abc import Iterator

from rebasekit import pyparse

#: A function definition, sync or async (what the analyses walk as a body).
FuncNode = ast.FunctionDef | ast.AsyncFunctionDef


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, None for anything else (calls, subscripts)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


# Parsed trees kept for reuse, newest last; 512 covers every module one scan touches in
# both trees (about 130 MB of nodes for 300 vLLM modules).
_MAX_TREES = 512
_TREES: OrderedDict[str, ast.Module] = OrderedDict()


def first_param(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name of a function's first positional parameter (``self`` of a method)."""
    args = [*func.args.posonlyargs, *func.args.args]
    return args[0].arg if args else None


# The attribute under which a tree kept for many walks holds each node's children.
_KIDS = "_rebasekit_children"


def _child_list(node: ast.AST) -> list[ast.AST]:
    out: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend([v for v in value if isinstance(v, ast.AST)])
    return out


def children(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``, in its order (callers must not change the list).

    The checks visit about a million nodes per scan, most of them in the plugin's own
    trees, which every check walks again: a tree passed to :func:`keep_children` answers
    from the lists stored on its nodes; any other tree is read field by field each time.
    """
    kids = getattr(node, _KIDS, None)
    return kids if kids is not None else _child_list(node)


def keep_children(tree: ast.AST) -> None:
    """Store each node's children on it, for a tree that is walked many times and never
    changed (the plugin's files, kept for a whole scan); upstream trees are walked a few
    times each and are left alone, so their memory does not grow by a list per node."""
    if getattr(tree, _KIDS, None) is not None:
        return
    todo = [tree]
    while todo:
        node = todo.pop()
        kids = _child_list(node)
        setattr(node, _KIDS, kids)
        todo.extend(kids)


def walk(node: ast.AST) -> list[ast.AST]:
    """Every node under ``node`` (itself first) in exactly ``ast.walk``'s order, as a list.

    :func:`children` is inlined (a walk visits every node: without the call per node a
    walk of the plugin's trees takes a third less time); iterating the list while it
    grows visits what was appended.
    """
    out = [node]
    for sub in out:
        kids = getattr(sub, _KIDS, None)
        out.extend(kids if kids is not None else _child_list(sub))
    return out


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def own_nodes(func: ast.AST) -> Iterator[ast.AST]:
    """Nodes of ``func``'s body, not descending into nested functions, lambdas or classes."""
    stack = list(children(func))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        kids = getattr(node, _KIDS, None)  # children(node), inlined as in walk
        stack.extend(kids if kids is not None else _child_list(node))


def _as_text(source: str | bytes) -> str | None:
    """``source`` decoded as the interpreter would, or None when only the bytes parser can
    say what is wrong with it (a bad coding cookie, undecodable bytes)."""
    if isinstance(source, str):
        return source
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None


def parse_shared(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """:func:`pyparse.parse`, once per distinct text in this process (callers must not
    mutate the tree, or must put back what they change before returning).

    The symbol index, the fork and body comparisons and the probes all read the same
    upstream modules; keyed by content, each module is parsed once however many of
    them look at it. A file that does not parse raises each time, with ``filename`` in
    the error, and is not kept.
    """
    text = _as_text(source)
    if text is None:
        return pyparse.parse(source, filename=filename)
    key = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
    tree = _TREES.get(key)
    if tree is not None:
        _TREES.move_to_end(key)
        return tree
    tree = pyparse.parse(text, filename=filename)
    _TREES[key] = tree
    if len(_TREES) > _MAX_TREES:
        _TREES.popitem(last=False)
    return tree


def parse_text(text: str) -> ast.Module | None:
    """Parse ``text`` (shared by content, see :func:`parse_shared`); None if broken."""
    try:
        return parse_shared(text)
    except (SyntaxError, ValueError):
        return None
