"""Print rebasekit's import graph between its packages, from the source's AST.

    python scripts/import_graph.py            # package -> package edges with counts
    python scripts/import_graph.py --deferred # also list every function-level import

A "package" is a subpackage of rebasekit (``rebasekit.index``) or a top-level module
(``rebasekit.scan``). Imports inside functions are counted apart ("deferred"): they are
either guards against a real import cycle or leftovers that hide the layering. Imports
under ``if TYPE_CHECKING:`` are counted apart too ("typing"): they name an interface for
annotations and load nothing at run time, which is why lint-imports ignores them.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = "rebasekit"


def unit_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """Lines of the imports inside ``if TYPE_CHECKING:`` blocks."""
    lines = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
        if name == "TYPE_CHECKING":
            for stmt in node.body:
                lines |= {
                    sub.lineno
                    for sub in ast.walk(stmt)
                    if isinstance(sub, (ast.Import, ast.ImportFrom))
                }
    return lines


def imports(path: Path) -> list[tuple[str, str, int]]:
    """(imported rebasekit module, kind, line) for every import in ``path``; the kind is
    "module", "deferred" (inside a function) or "typing" (under ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    deferred_lines = {
        sub.lineno
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for sub in ast.walk(node)
        if isinstance(sub, (ast.Import, ast.ImportFrom))
    }
    typing_lines = _type_checking_lines(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [base]
        else:
            continue
        for name in names:
            if name == TOP or name.startswith(TOP + "."):
                kind = (
                    "deferred"
                    if node.lineno in deferred_lines
                    else "typing"
                    if node.lineno in typing_lines
                    else "module"
                )
                out.append((name, kind, node.lineno))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deferred", action="store_true", help="list function-level imports")
    parser.add_argument(
        "--root", type=Path, default=None, help="checkout to read (default: this one)"
    )
    args = parser.parse_args()
    global ROOT
    ROOT = (args.root or ROOT).resolve()
    edges: Counter[tuple[str, str]] = Counter()
    deferred: Counter[tuple[str, str]] = Counter()
    typing: Counter[tuple[str, str]] = Counter()
    listing = []
    files = sorted((ROOT / TOP).rglob("*.py"))
    for path in files:
        src = module_name(path)
        for target, kind, line in imports(path):
            a, b = unit_of(src), unit_of(target)
            if a == b:
                continue
            {"module": edges, "deferred": deferred, "typing": typing}[kind][(a, b)] += 1
            if kind == "deferred":
                listing.append(f"  {path.relative_to(ROOT)}:{line} -> {target}")
    units = sorted({u for e in list(edges) + list(deferred) + list(typing) for u in e})
    print(f"{len(files)} modules, {len(units)} packages")
    print(f"module-level edges: {len(edges)} package pairs ({sum(edges.values())} imports)")
    print(f"deferred edges: {len(deferred)} package pairs ({sum(deferred.values())} imports)")
    print(f"typing-only edges: {len(typing)} package pairs ({sum(typing.values())} imports)")
    both = set(edges) | set(deferred)
    cycles = sorted({tuple(sorted((a, b))) for a, b in both if (b, a) in both})
    print(f"two-way package pairs (cycles of length 2): {len(cycles)}")
    for a, b in cycles:
        print(f"  {a} <-> {b}")
    print("edges (module-level / deferred / typing-only imports):")
    for a, b in sorted(both | set(typing)):
        print(f"  {a} -> {b}: {edges[(a, b)]}/{deferred[(a, b)]}/{typing[(a, b)]}")
    if args.deferred:
        print("deferred imports:")
        print("\n".join(listing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
