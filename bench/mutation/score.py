"""Per-module mutation score from mutmut 3's result files (``mutants/**/*.py.meta``).

Killed means a test failed (or pytest errored) with the mutant in place; a timeout also
counts as killed, the way mutmut's own summary counts it. Everything else that ran is a
survivor; mutants no selected test reaches are listed separately as "no tests".
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

KILLED = {1, 3, 36, -24, 24, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}
GROUPS = (
    "rebasekit/checks",
    "rebasekit/drift",  # the layout the recorded runs measured
    "rebasekit/analysis",  # the same package, renamed since
    "arctic_inference/patching.py",
    "arctic_inference/suffix_decoding/cache.py",
)


def group_of(path: str) -> str:
    return next((g for g in GROUPS if path.startswith(g)), path)


def killed_names(mutants: Path) -> set[str]:
    out: set[str] = set()
    for meta in mutants.rglob("*.py.meta"):
        out |= {
            k for k, c in json.loads(meta.read_text())["exit_code_by_key"].items() if c in KILLED
        }
    return out


def main(mutants: Path, killed_earlier: Path | None = None) -> int:
    """``killed_earlier``: a run of the same sample whose kills count here unless rerun."""
    earlier = killed_names(killed_earlier) if killed_earlier else set()
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for meta in sorted(mutants.rglob("*.py.meta")):
        source = meta.relative_to(mutants).as_posix().removesuffix(".meta")
        data = json.loads(meta.read_text())
        for name, code in sorted(data.get("exit_code_by_key", {}).items()):
            c = counts[group_of(source)]
            if code is None and name in earlier:
                code = 1
                c["killed earlier"] += 1
            if code is None:  # outside the sample, or the run stopped before it
                c["not run"] += 1
                continue
            c["total"] += 1
            if code in KILLED:
                c["killed"] += 1
            elif code in SURVIVED:
                c["survived"] += 1
            elif code in NO_TESTS:
                c["no tests"] += 1
            else:
                c[f"other ({code})"] += 1
    if not counts:
        print(f"no mutmut results under {mutants}", file=sys.stderr)
        return 2
    total = Counter()
    print(f"{'module':45} {'killed':>7} {'total':>6} {'score':>7}  other")
    for group in sorted(counts):
        c = counts[group]
        total.update(c)
        rest = ", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k not in ("killed", "total"))
        print(
            f"{group:45} {c['killed']:7} {c['total']:6} {c['killed'] / max(c['total'], 1):7.1%}  {rest}"
        )
    rest = ", ".join(f"{k} {v}" for k, v in sorted(total.items()) if k not in ("killed", "total"))
    print(
        f"{'all':45} {total['killed']:7} {total['total']:6} {total['killed'] / max(total['total'], 1):7.1%}  {rest}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None))
