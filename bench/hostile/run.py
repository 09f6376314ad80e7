"""Replay the hostile-input corpus (tests/hostile) and print the tally.

    python bench/hostile/run.py                      # against this checkout
    python bench/hostile/run.py --rebasekit-root DIR # against another copy of the sources

The tally counts, over every case: inputs tried, clear errors (the promised exit code
and message for a bad input), right results (the promised clean/findings answer),
tracebacks, false cleans ("clean" where findings were due, or a result, 0 or 1, where
the contract says bad input or incomplete), lost data (a user file changed or a file written outside the documented
places) and wrong answers (anything else). Results are recorded in RESULTS.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "hostile"))

from corpus import Outcome, all_cases, run_case  # noqa: E402

COLUMNS = ["clear error", "right result", "traceback", "false clean", "lost data", "wrong answer"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rebasekit-root",
        type=Path,
        default=REPO,
        help="folder holding the rebasekit package to run (default: this checkout)",
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("-v", "--verbose", action="store_true", help="print each case's output")
    args = parser.parse_args()
    cases = all_cases()
    start = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="rk-hostile-") as tmp,
        ThreadPoolExecutor(args.jobs) as pool,
    ):
        outcomes: list[Outcome] = list(
            pool.map(
                lambda ic: run_case(
                    ic[1], Path(tmp) / f"{ic[0]:03d}", args.rebasekit_root.resolve()
                ),
                enumerate(cases),
            )
        )
    elapsed = time.perf_counter() - start
    for o in outcomes:
        print(f"{o.verdict:13} exit {o.exit_code:>2} (want {o.case.exit_code})  {o.case.name}")
        if args.verbose or o.verdict not in ("clear error", "right result"):
            for line in o.problems():
                print(f"{'':15}{line}")
            if args.verbose:
                print("".join(f"{'':15}| {line}\n" for line in o.output.splitlines()[-8:]), end="")
    tally = Counter(o.verdict for o in outcomes)
    print(f"\nrebasekit from {args.rebasekit_root} ({elapsed:.0f} s)")
    print("| inputs tried | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    print(f"| {len(outcomes)} | " + " | ".join(str(tally.get(c, 0)) for c in COLUMNS) + " |")
    return 0 if all(o.verdict in ("clear error", "right result") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
