"""CPU, wall time and peak memory of the ``rebasekit`` command line itself, cold and warm.

``scan_speed.py`` times the phases of a scan inside one driver; this times what a user
runs: ``python -m rebasekit ARGS...`` in a folder, over a fresh cache folder whose
``trees`` entry points at the already downloaded release trees (cold), then again over
the cache that run filled (warm). Each ``--python`` is a venv whose ``python`` imports
one copy of rebasekit; copies are run in alternation so load on the shared machine hits
them alike. ``python -m`` puts the working folder first on ``sys.path``, so ``--cwd`` must
not hold a ``rebasekit`` package (it would be imported by every copy). Every run's output (the cache folder replaced by ``<cache>``) and exit code
must be the same across copies and temperatures, or the script fails: a faster scan
that reports other findings is not faster.

Usage:
  python bench/speed/cmd_speed.py --cwd DIR --python NAME=PYTHON [--python ...]
      [--repeat N] [--json OUT] -- scan --plugin ... --json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def timed(python: str, argv: list[str], cwd: Path, cache: Path) -> dict:
    """One command in a wrapper interpreter, whose children's rusage is this command's alone."""
    code = (
        "import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "wall = time.perf_counter() - t\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "sys.stdout.buffer.write(p.stdout)\n"
        "sys.stderr.write(json.dumps({'rc': p.returncode, 'wall': wall,"
        " 'cpu': u.ru_utime + u.ru_stime, 'rss_mb': u.ru_maxrss / 1024,"
        " 'err': p.stderr.decode()[-2000:]}))\n"
    )
    env = {**os.environ, "REBASEKIT_CACHE_DIR": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-c", code, python, "-m", "rebasekit", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
    )
    meta = json.loads(proc.stderr.decode().strip().splitlines()[-1])
    text = proc.stdout.decode().replace(str(cache), "<cache>")
    meta["out_sha"] = hashlib.sha256(text.encode()).hexdigest()[:12]
    return meta


def fresh_cache(parent: Path, trees: Path) -> Path:
    """A cache folder with the downloaded release trees and nothing else."""
    cache = Path(tempfile.mkdtemp(dir=parent))
    (cache / "trees").symlink_to(trees)
    return cache


def stats(values: list[float]) -> str:
    """median (min-max); integers for large values such as megabytes."""
    fmt = ".0f" if min(values) >= 50 else ".2f"
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cwd", type=Path, required=True)
    ap.add_argument("--python", action="append", required=True, help="NAME=PATH")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--trees", type=Path, help="downloaded release trees (default: the cache's)")
    ap.add_argument("--json", type=Path, help="write every measurement here")
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if (args.cwd / "rebasekit").exists():
        sys.exit(f"{args.cwd} holds a rebasekit package: every copy would import that one")
    sys.path.insert(0, str(REPO))
    from rebasekit.paths import trees_dir

    trees = (args.trees or trees_dir()).resolve()
    pythons = dict(p.split("=", 1) for p in args.python)
    rows: dict[str, dict[str, list[dict]]] = {n: {"cold": [], "warm": []} for n in pythons}
    with tempfile.TemporaryDirectory(prefix="rk-cmd-") as tmp:
        for i in range(args.repeat):
            for name, python in pythons.items():  # alternate: noise hits every copy alike
                cache = fresh_cache(Path(tmp), trees)
                for temp in ("cold", "warm"):
                    data = timed(python, argv, args.cwd, cache)
                    rows[name][temp].append(data)
                    print(
                        f"[{i + 1}/{args.repeat}] {name} {temp}: {data['cpu']:.2f} s CPU, "
                        f"{data['wall']:.2f} s wall, {data['rss_mb']:.0f} MB, "
                        f"exit {data['rc']}, output {data['out_sha']}",
                        file=sys.stderr,
                    )
    outputs = {(r["rc"], r["out_sha"]) for v in rows.values() for t in v.values() for r in t}
    print("| copy | cold CPU | cold wall | warm CPU | warm wall | cold RSS MB | warm RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for name, temps in rows.items():
        cells = [
            stats([r[key] for r in temps[temp]])
            for key, temp in (("cpu", "cold"), ("wall", "cold"), ("cpu", "warm"), ("wall", "warm"))
        ] + [stats([r["rss_mb"] for r in temps[t]]) for t in ("cold", "warm")]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if len(outputs) != 1:
        sys.exit(f"outputs differ between runs: {sorted(outputs)}")
    print(f"every run: exit {next(iter(outputs))[0]}, output {next(iter(outputs))[1]}")


if __name__ == "__main__":
    main()
