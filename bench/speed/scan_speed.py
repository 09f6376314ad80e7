"""Per-phase wall time and peak memory of a full ``rebasekit scan``, cold and warm.

Each measurement is a fresh interpreter that does what ``rebasekit scan --json`` does
(imports the CLI, loads the trees, extracts the corpus, runs every check, renders the
JSON report) and times each phase: the trees and scan context, the corpus, each check
(both trees together; the symbol index is built lazily inside them, so its share is
also shown on its own), and the report. cold = a fresh cache folder whose ``trees``
entry points at the already downloaded release trees (nothing of rebasekit's parse or
derived caches); warm = the same command again over the cache the cold run filled.

Cases run side by side in one table: a plugin folder with its patch bases and its OLD
and NEW trees, given as release versions (the version cache) or as two plain source
folders. ``--compare DIR`` times a second copy of rebasekit (DIR holds a ``rebasekit``
package, e.g. an export of an earlier commit) in alternation with this one.

Usage:
  python bench/speed/scan_speed.py --case NAME=PLUGIN_DIR:BASE[,BASE]:OLD:NEW ... [--repeat N]
      [--compare DIR] [--json OUT]
  (BASE may be empty to use the plugin's configured bases; OLD/NEW are X.Y.Z or folders.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

DRIVER = r"""
import json, os, resource, sys, time
t0 = time.perf_counter()
src = os.environ.get("BENCH_REBASEKIT_SOURCE")
if src:  # import that copy, not the editable install
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable")]
    sys.path.insert(0, src)
import rebasekit.cli  # the same imports as the command line
assert not src or sys.modules["rebasekit"].__file__.startswith(src)
try:
    from rebasekit.gctune import for_syntax_trees
except ImportError:  # an older copy: the interpreter's default collector settings
    pass
else:
    for_syntax_trees()
import dataclasses
from pathlib import Path
from rebasekit import scan as scanmod
from rebasekit.index.code_index import CodeIndex
from rebasekit.load import scan_context
from rebasekit.context import ScanConfig
from rebasekit.report import to_json

phases = {"import": time.perf_counter() - t0}
plugin, bases, old, new = sys.argv[1], [b for b in sys.argv[2].split(",") if b], sys.argv[3], sys.argv[4]

index_time = [0.0]
real_module = CodeIndex.module
def timed_module(self, modname):
    if modname in self._modules:
        return self._modules[modname]
    t = time.perf_counter()
    try:
        return real_module(self, modname)
    finally:
        index_time[0] += time.perf_counter() - t
CodeIndex.module = timed_module

check_time = {}
def timed(check):
    def run(ctx):
        t = time.perf_counter()
        try:
            return list(check.func(ctx))
        finally:
            check_time[check.name] = check_time.get(check.name, 0.0) + time.perf_counter() - t
    return dataclasses.replace(check, func=run)
real_selected = scanmod.selected_checks
scanmod.selected_checks = lambda *a, **k: [timed(c) for c in real_selected(*a, **k)]

t = time.perf_counter()
corpus = scanmod.load_corpus(Path(plugin), bases or None)
phases["corpus"] = time.perf_counter() - t
t = time.perf_counter()
needs = {n for c in real_selected() for n in c.needs}
ctx = scan_context(corpus, new, old, needs=needs, config=ScanConfig(), new_reason="--to", old_reason="--from")
phases["load trees"] = time.perf_counter() - t
t = time.perf_counter()
result = scanmod.run_scan(ctx)
phases["checks (total)"] = time.perf_counter() - t
t = time.perf_counter()
report = to_json(result)
phases["report"] = time.perf_counter() - t
phases["total in process"] = time.perf_counter() - t0
print(json.dumps({
    "phases": phases,
    "index": index_time[0],
    "checks": check_time,
    "findings": len(result.findings),
    "report_sha": __import__("hashlib").sha256(report.encode()).hexdigest()[:12],
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "cpu": (lambda u: u.ru_utime + u.ru_stime)(resource.getrusage(resource.RUSAGE_SELF)),
}))
"""


def run_once(case: dict, source: Path | None, cache: Path) -> dict:
    env = {**os.environ, "REBASEKIT_CACHE_DIR": str(cache)}
    env.pop("BENCH_REBASEKIT_SOURCE", None)
    if source is not None:
        env["BENCH_REBASEKIT_SOURCE"] = str(source)
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", DRIVER, case["plugin"], case["bases"], case["old"], case["new"]],
        env=env,
        capture_output=True,
        text=True,
        cwd=str(cache),  # not the repo: "" on sys.path must not shadow the copy under test
    )
    wall = time.perf_counter() - t
    if out.returncode != 0:
        sys.exit(f"scan failed ({case['name']}):\n{out.stderr[-3000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["wall"] = wall
    return data


def fresh_cache(parent: Path, trees: Path) -> Path:
    """A cache folder with the downloaded release trees and nothing else."""
    cache = Path(tempfile.mkdtemp(dir=parent))
    (cache / "trees").symlink_to(trees)
    return cache


def parse_case(text: str) -> dict:
    name, _, rest = text.partition("=")
    plugin, bases, old, new = rest.split(":")
    return {"name": name, "plugin": plugin, "bases": bases, "old": old, "new": new}


def stats(values: list[float]) -> str:
    """median (min-max); integers for large values such as megabytes."""
    fmt = ".0f" if min(values) >= 50 else ".2f"
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def table(rows: dict[str, dict[str, list[dict]]]) -> str:
    """One column per case and temperature; cells are median (min-max) seconds."""
    columns = [(name, temp) for name in rows for temp in ("cold", "warm")]
    phase_names: list[str] = []
    check_names: list[str] = []
    for name, temp in columns:
        for run in rows[name][temp]:
            phase_names += [p for p in run["phases"] if p not in phase_names]
            check_names += [c for c in run["checks"] if c not in check_names]
    head = "| phase | " + " | ".join(f"{n} {t}" for n, t in columns) + " |"
    lines = [head, "|---" * (len(columns) + 1) + "|"]

    def row(label: str, pick) -> None:
        cells = []
        for name, temp in columns:
            vals = [v for v in (pick(r) for r in rows[name][temp]) if v is not None]
            cells.append(stats(vals) if vals else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    for p in ("import", "corpus", "load trees"):
        row(p, lambda r, p=p: r["phases"].get(p))
    row("index (inside the checks)", lambda r: r["index"])
    for c in check_names:
        row(f"check {c.rsplit('.', 1)[-1]}", lambda r, c=c: r["checks"].get(c))
    for p in ("checks (total)", "report", "total in process"):
        row(p, lambda r, p=p: r["phases"].get(p))
    row("**wall, fresh interpreter**", lambda r: r["wall"])
    row("CPU (user + system)", lambda r: r["cpu"])
    row("peak RSS (MB)", lambda r: r["rss_mb"])
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", required=True, type=parse_case)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--compare", type=Path, help="folder holding another rebasekit package")
    ap.add_argument("--trees", type=Path, help="downloaded release trees (default: the cache's)")
    ap.add_argument("--json", type=Path, help="write every measurement here")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from rebasekit.paths import trees_dir

    trees = (args.trees or trees_dir()).resolve()
    variants = {"this": None, **({"compare": args.compare.resolve()} if args.compare else {})}
    rows: dict[str, dict[str, dict[str, list[dict]]]] = {
        v: {c["name"]: {"cold": [], "warm": []} for c in args.case} for v in variants
    }
    with tempfile.TemporaryDirectory(prefix="rk-speed-") as tmp:
        for i in range(args.repeat):
            for case in args.case:
                for variant, source in variants.items():  # alternate: noise hits both alike
                    cache = fresh_cache(Path(tmp), trees)
                    for temp in ("cold", "warm"):
                        data = run_once(case, source, cache)
                        rows[variant][case["name"]][temp].append(data)
                        print(
                            f"[{i + 1}/{args.repeat}] {variant} {case['name']} {temp}: "
                            f"{data['wall']:.2f} s, {data['rss_mb']:.0f} MB, "
                            f"{data['findings']} findings, report {data['report_sha']}",
                            file=sys.stderr,
                        )
    for variant in variants:
        print(f"\n### {variant}" + (f" ({args.compare})" if variant == "compare" else ""))
        print(table(rows[variant]))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
