"""Print each surviving mutant of the last run as a one-hunk diff against the original.

Reads mutmut 3's mutated copies (``mutants/<file>.py``, where every function has an
``..._mutmut_orig`` and numbered variants) and result files; faster than calling
``mutmut show`` once per mutant.

    python bench/mutation/survivors.py build/mutation/work/mutants [--no-tests]
"""

from __future__ import annotations

import ast
import difflib
import json
import sys
from pathlib import Path


def functions(path: Path) -> dict[str, str]:
    text = path.read_text()
    tree = ast.parse(text)
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in node.name:
            out[node.name] = ast.get_source_segment(text, node) or ""
    return out


def main(mutants: Path, with_no_tests: bool) -> None:
    for meta in sorted(mutants.rglob("*.py.meta")):
        codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
        wanted = [n for n, c in codes.items() if c == 0 or (with_no_tests and c in (5, 33))]
        if not wanted:
            continue
        funcs = functions(meta.with_suffix(""))
        for name in sorted(wanted, key=lambda n: (n.rsplit("_", 1)[0], int(n.rsplit("_", 1)[1]))):
            short = name.split(".")[-1]
            orig = funcs.get(short.rsplit("__mutmut_", 1)[0] + "__mutmut_orig", "")
            body = funcs.get(short, "")
            diff = [
                line
                for line in difflib.unified_diff(
                    orig.splitlines()[1:], body.splitlines()[1:], lineterm="", n=0
                )
            ][2:]
            changed = " | ".join(d for d in diff if not d.startswith("@@"))
            print(f"{name}  {'(no tests) ' if codes[name] != 0 else ''}{changed}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), "--no-tests" in sys.argv)
