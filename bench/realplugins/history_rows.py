"""``compare-pins --history`` over arctic-inference 0.0.9 .. 0.1.2 with no probe file.

    python bench/realplugins/history_rows.py

Builds the git repository ``run.py`` builds (one commit per release, oldest first), runs
``rebasekit compare-pins --history --patch-base ArcticPatch --json`` on it and prints, per
derived row, the columns at which its value moved and its flags, with the wall time. The
held-out releases 0.2.0 and 0.3.0 are never fetched.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import fetch  # noqa: E402
import run  # noqa: E402

VERSIONS = ["0.0.9", "0.1.0", "0.1.1", "0.1.2"]


def main() -> None:
    sources = {v: fetch.sdist("arctic-inference", v) for v in VERSIONS}
    for src in sources.values():
        fetch.vllm_tree(fetch.read_pin(src))  # the trees compare-pins opens, fetched once
    with tempfile.TemporaryDirectory(prefix="rk-history-") as tmp:
        repo = run.history_repo("arctic-inference", sources, Path(tmp) / "arctic")
        cmd = [sys.executable, "-m", "rebasekit", "compare-pins", "--repo", str(repo)]
        cmd += ["--history", "--patch-base", "ArcticPatch", "--json"]
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    data = json.loads(done.stdout)
    columns = data["columns"]
    print(f"exit {done.returncode}, {seconds:.1f} s, complete {data['complete']}")
    print("columns: " + ", ".join(f"{c['id']} {c['pin']}" for c in columns))
    derived = [r for r in data["rows"] if r["kind"].startswith("upstream-")]
    moved = 0
    for row in derived:
        values = [row["cells"][c["id"]]["value"] for c in columns]
        at = [columns[i]["id"] for i in range(1, len(values)) if values[i] != values[i - 1]]
        moved += bool(at)
        flags = ",".join(row["flags"])
        print(f"  {row['label']:<52} moved at {' '.join(at) or '-':<8} {flags}")
    print(f"{len(derived)} derived rows, {moved} moved at a bump")
    for note in data.get("notes", []):
        print(f"note: {note}")


if __name__ == "__main__":
    main()
