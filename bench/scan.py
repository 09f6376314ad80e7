"""Wall time of a full rebasekit scan of the project's plugin against two real vLLM trees.

cold = empty parse cache (trees already downloaded); warm = second run, same cache.
Each measurement runs in a fresh interpreter so import time is included.
Usage: python bench/scan.py [OLD] [NEW] [--repeat N] [--select RK0,RK1,RK2]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CODE = """
import sys, time
t = time.perf_counter()
from rebasekit.scan import scan_plugin
sel = tuple(c for c in sys.argv[3].split(",") if c)
r = scan_plugin(sys.argv[2], from_=sys.argv[1], select=sel)
print(time.perf_counter() - t, len(r.findings))
"""


SELECT = ""


def run_once(old: str, new: str, env: dict) -> tuple[float, int]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CODE, old, new, SELECT], env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    return wall, int(out.stdout.split()[1])


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    global SELECT
    SELECT = sys.argv[sys.argv.index("--select") + 1] if "--select" in sys.argv else ""
    args = [a for a in args if a != SELECT]
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    old, new = (args + ["0.26.0", "0.27.0"])[:2] if len(args) < 2 else args[:2]
    from rebasekit.paths import cache_root

    trees = cache_root() / "trees"
    subprocess.run([sys.executable, "-c", f"from rebasekit.upstream import open_tree; open_tree('{old}'); open_tree('{new}')"], check=True)
    colds, warms = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            os.symlink(trees, os.path.join(cache, "trees"))  # downloaded trees kept, parse cache empty
            env = {**os.environ, "REBASEKIT_CACHE_DIR": cache}
            cold, n = run_once(old, new, env)
            warm, _ = run_once(old, new, env)
            colds.append(cold)
            warms.append(warm)
    print(f"scan ({SELECT or 'all checks'}), plugin vs {old} -> {new} ({n} findings), {repeat} runs, fresh interpreter each")
    print(f"cold (empty parse cache): median {statistics.median(colds):.2f} s  (min {min(colds):.2f})")
    print(f"warm (parse cache filled): median {statistics.median(warms):.2f} s  (min {min(warms):.2f})")


if __name__ == "__main__":
    main()
