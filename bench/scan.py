"""Wall time of a full rebasekit scan of the project's plugin against two real vLLM trees.

cold = empty parse/derived cache (release trees already downloaded); warm = the same
command again with the cache it filled. Each measurement runs in a fresh interpreter,
so import time is included.

``--compare DIR`` measures a second copy of rebasekit side by side (DIR contains a
``rebasekit`` package, e.g. a snapshot taken before a change): the runs alternate
between the two, so machine noise hits both alike. ``--compare-trees TREES`` gives that
copy its own release-tree folder when its cache manifests have another format. Both copies are then imported from
their folder first on ``sys.path``, with the editable-install finder taken out.

Usage: python bench/scan.py [OLD] [NEW] [--repeat N] [--select RK0,RK1,RK2] [--compare DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CODE = """
import os, sys, time
t = time.perf_counter()
if os.environ.get("BENCH_REBASEKIT_SOURCE"):  # import that copy, not the editable install
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable")]
    sys.path.insert(0, os.environ["BENCH_REBASEKIT_SOURCE"])
from rebasekit.scan import scan_plugin
assert not os.environ.get("BENCH_REBASEKIT_SOURCE") or sys.modules["rebasekit"].__file__.startswith(
    os.environ["BENCH_REBASEKIT_SOURCE"])
sel = tuple(c for c in sys.argv[3].split(",") if c)
r = scan_plugin(sys.argv[2], old=sys.argv[1], select=sel, plugin=__import__("pathlib").Path(sys.argv[4]))
print(time.perf_counter() - t, len(r.findings))
"""
REPO = Path(__file__).resolve().parents[1]


def run_once(old: str, new: str, select: str, env: dict) -> tuple[float, int]:
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CODE, old, new, select, str(REPO / "arctic_inference")],
        env=env,
        capture_output=True,
        text=True,
        cwd=env["REBASEKIT_CACHE_DIR"],
    )  # not the repo: "" on sys.path
    if out.returncode != 0:
        sys.exit(f"scan failed:\n{out.stderr}")
    return time.perf_counter() - t, int(out.stdout.split()[1])


def variant_env(source: Path | None, cache: str) -> dict:
    env = {**os.environ, "REBASEKIT_CACHE_DIR": cache}
    if source is not None:
        env["BENCH_REBASEKIT_SOURCE"] = str(source)
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", nargs="?", default="0.26.0")
    ap.add_argument("new", nargs="?", default="0.27.0")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--select", default="")
    ap.add_argument(
        "--compare", type=Path, help="folder holding another rebasekit package to time alongside"
    )
    ap.add_argument(
        "--compare-trees",
        type=Path,
        help="release-tree folder for the --compare copy, when it reads another manifest format",
    )
    args = ap.parse_args()
    from rebasekit.paths import cache_root
    from rebasekit.upstream import open_tree

    open_tree(args.old), open_tree(args.new)  # download once, outside the timings
    trees = cache_root() / "trees"
    variants: list[tuple[str, Path | None]] = [("current", REPO if args.compare else None)]
    variant_trees = {"current": trees}
    if args.compare:
        variants.append((f"compare ({args.compare})", args.compare.resolve()))
        variant_trees[variants[-1][0]] = (args.compare_trees or trees).resolve()
    times: dict[str, dict[str, list[float]]] = {
        name: {"cold": [], "warm": []} for name, _ in variants
    }
    counts: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, source in variants:
            with tempfile.TemporaryDirectory() as cache:
                os.symlink(
                    variant_trees[name], os.path.join(cache, "trees")
                )  # trees kept, parse cache empty
                env = variant_env(source, cache)
                cold, counts[name] = run_once(args.old, args.new, args.select, env)
                warm, _ = run_once(args.old, args.new, args.select, env)
                times[name]["cold"].append(cold)
                times[name]["warm"].append(warm)
    print(
        f"scan ({args.select or 'all checks'}), plugin vs {args.old} -> {args.new}, "
        f"{args.repeat} runs each, fresh interpreter per run"
    )
    for name, _ in variants:
        for phase in ("cold", "warm"):
            values = times[name][phase]
            print(
                f"{name:>10} {phase}: median {statistics.median(values):.2f} s  (min {min(values):.2f}, "
                f"max {max(values):.2f})  {counts[name]} findings"
            )


if __name__ == "__main__":
    main()
