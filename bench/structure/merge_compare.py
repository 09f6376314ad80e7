"""Compare rebasekit's in-process three-way merge with ``git merge-file`` on real vLLM changes.

    python bench/structure/merge_compare.py [--old 0.26.0] [--new 0.27.0] [--seed 1234]

For every ``.py`` file that changed between the two releases, and for every function or
method whose source changed, it merges (base = OLD, theirs = NEW) into a plugin copy
made from OLD by seeded random edits (a line changed, inserted or deleted), once with
:func:`rebasekit.analysis.merge.three_way` and once with ``git merge-file -p`` on
temporary files, and counts where the two disagree. Where one side is clean it checks
that the clean result holds every line both sides meant (line multiset
``ours + theirs - base``). The trees come from rebasekit's release cache (downloaded on
first use).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import subprocess
import tempfile
import textwrap
from collections import Counter
from pathlib import Path

from rebasekit.analysis.merge import three_way
from rebasekit.upstream import open_tree

LABELS = ("plugin", "OLD", "NEW")


def git_merge(base: str, ours: str, theirs: str) -> tuple[str, int]:
    """``git merge-file -p`` of the three texts: (merged text, conflict count)."""
    with tempfile.TemporaryDirectory(prefix="merge-compare-") as tmp:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_bytes(text.encode("utf-8"))
            paths.append(str(path))
        labels = [arg for label in LABELS for arg in ("-L", label)]
        proc = subprocess.run(
            ["git", "merge-file", "-p", *labels, *paths], capture_output=True, check=False
        )
    if not 0 <= proc.returncode <= 127:
        raise RuntimeError(proc.stderr.decode())
    return proc.stdout.decode("utf-8"), proc.returncode


def plugin_edit(text: str, rng: random.Random, edits: int) -> str:
    """``text`` with ``edits`` random line edits, as a plugin's copy of it might have."""
    lines = text.splitlines(keepends=True)
    for _ in range(edits):
        if not lines:
            break
        i = rng.randrange(len(lines))
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        op = rng.choice(("change", "insert", "delete"))
        if op == "change" and lines[i].strip():
            lines[i] = lines[i].rstrip("\n") + "  # plugin\n"
        elif op == "insert":
            lines.insert(i, indent + "plugin_hook()\n")
        elif len(lines) > 1:
            del lines[i]
    return "".join(lines)


def functions(source: str) -> dict[str, str]:
    """Dedented source of every function and method, by qualified name."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    lines = source.splitlines(keepends=True)
    out: dict[str, str] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                    out[name] = textwrap.dedent("".join(lines[start - 1 : child.end_lineno]))
                walk(child, name + ".")

    walk(tree, "")
    return out


def _nl(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _keeps_both_sides(merged: str, base: str, ours: str, theirs: str) -> bool:
    expected = Counter(ours.splitlines(True)) + Counter(theirs.splitlines(True))
    expected.subtract(Counter(base.splitlines(True)))
    return +expected == Counter(merged.splitlines(True))


def cases(old: str, new: str) -> list[tuple[str, str, str]]:
    """(kind, base, theirs) for every changed file and every changed function."""
    old_tree, new_tree = open_tree(old, "vllm"), open_tree(new, "vllm")
    out = []
    for rel in sorted(old_tree.iter_py_files()):
        if not new_tree.exists(rel):
            continue
        a, b = old_tree.read_text(rel), new_tree.read_text(rel)
        if a == b or not a:
            continue
        out.append(("file", _nl(a), _nl(b)))
        fa, fb = functions(a), functions(b)
        out += [
            ("function", _nl(fa[q]), _nl(fb[q]))
            for q in sorted(fa.keys() & fb.keys())
            if fa[q] != fb[q]
        ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="0.26.0")
    parser.add_argument("--new", default="0.27.0")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    stats: dict[str, Counter] = {}
    for kind, base, theirs in cases(args.old, args.new):
        for edits in (1, 3):
            ours = _nl(plugin_edit(base, rng, edits if kind == "function" else 3 * edits))
            ours_result = three_way(base, ours, theirs, LABELS)
            git_text, git_conflicts = git_merge(base, ours, theirs)
            s = stats.setdefault(kind, Counter())
            s["merges"] += 1
            s["conflicts rebasekit"] += ours_result.conflicts
            s["conflicts git"] += git_conflicts
            if (ours_result.text, ours_result.conflicts) == (git_text, git_conflicts):
                s["identical"] += 1
            elif not ours_result.conflicts and not git_conflicts:
                s["both clean, texts differ"] += 1
            elif not ours_result.conflicts:
                s["rebasekit clean, git conflicts"] += 1
                s["... rebasekit keeps both sides"] += _keeps_both_sides(
                    ours_result.text, base, ours, theirs
                )
            elif not git_conflicts:
                s["git clean, rebasekit conflicts"] += 1
                s["... git keeps both sides"] += _keeps_both_sides(git_text, base, ours, theirs)
            else:
                s["both conflict, regions differ"] += 1
    print(json.dumps({k: dict(v) for k, v in stats.items()}, indent=1))


if __name__ == "__main__":
    main()
