"""Benchmark: ``compare-pins --history`` on a long, merge-heavy repository.

Builds (with ``git fast-import`` through gitpython) a repository of COMMITS first-parent
commits on main, a feature branch merged every MERGE_EVERY commits, BRANCHES extra
branches (half of them rebase branches), and PINS pin bumps, plus probed files that
change often. Then times the real CLI. Usage: python bench/history.py [--commits N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git

PYPROJECT = '[project]\nname = "p"\n[project.optional-dependencies]\nvllm = [\n  # pin\n  "vllm=={pin}",\n]\n'
PROBES = (
    '[[probe]]\nlabel = "pin"\npin = true\n\n[[probe]]\nlabel = "sig"\nfile = "plug/runner.py"\n'
    'signature = "R.execute_model"\n\n[[probe]]\nlabel = "rev"\nfile = "plug/runner.py"\n'
    'constant = "REV"\n'
)


def blob(lines: list[str], text: str) -> None:  # a commit message
    data = text.encode()
    lines.append(f"data {len(data)}")
    lines.append(data.decode())


def build(root: Path, commits: int, merge_every: int, branches: int, pins: int) -> dict[str, int]:
    repo = git.Repo.init(root, initial_branch="main")
    out: list[str] = []
    mark = 0
    stamp = 1_600_000_000
    pin_at = {int(i * commits / pins): f"0.{10 + i}.0" for i in range(pins)}
    pin = "0.9.0"
    merges = 0
    main_mark = None
    for i in range(commits):
        stamp += 3600
        files = {
            "plug/runner.py": f"REV = {i}\nclass R:\n    def execute_model(self, a{i % 7}):\n        return a{i % 7}\n"
        }
        if i in pin_at:
            pin = pin_at[i]
        files["pyproject.toml"] = PYPROJECT.format(pin=pin)
        if i == 0:
            files["probes/evolution_probes.toml"] = PROBES
        side = None
        if i and i % merge_every == 0:  # a two-commit side branch merged into main
            side_marks = []
            for k in range(2):
                mark += 1
                out += [
                    f"commit refs/heads/feature/f{i}",
                    f"mark :{mark}",
                    f"committer B <b@x> {stamp + k} +0000",
                ]
                blob(out, f"side {i}.{k}\n")
                out.append(f"from :{side_marks[-1] if side_marks else main_mark}")
                out += [f"M 100644 inline side/f{i}.txt", *(_inline(f"{i}.{k}\n"))]
                side_marks.append(mark)
            side = side_marks[-1]
            merges += 1
        mark += 1
        out += ["commit refs/heads/main", f"mark :{mark}", f"committer A <a@x> {stamp} +0000"]
        blob(out, f"{'Merge' if side else 'change'} {i}\n")
        if main_mark:
            out.append(f"from :{main_mark}")
        if side:
            out.append(f"merge :{side}")
        for path, text in files.items():
            out += [f"M 100644 inline {path}", *(_inline(text))]
        main_mark = mark
        if i % max(1, commits // branches) == 0:
            name = (
                f"rebase/vllm_v0.{i}" if (i // max(1, commits // branches)) % 2 else f"topic/t{i}"
            )
            out += [f"reset refs/heads/{name}", f"from :{mark}"]
    stream = "\n".join(out) + "\n"
    proc = subprocess.run(
        ["git", "fast-import", "--quiet"], cwd=root, input=stream.encode(), check=True
    )
    repo.git.checkout("-f", "main")
    return {
        "commits": len(list(repo.iter_commits("--all"))),
        "merges": merges,
        "branches": len(repo.heads),
        "pins": len(pin_at) + 1,
        "returncode": proc.returncode,
    }


def _inline(text: str) -> list[str]:
    data = text.encode()
    return [f"data {len(data)}", text]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=600)
    parser.add_argument("--merge-every", type=int, default=5)
    parser.add_argument("--branches", type=int, default=40)
    parser.add_argument("--pins", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        shape = build(root, args.commits, args.merge_every, args.branches, args.pins)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            run = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "rebasekit.cli",
                    "compare-pins",
                    "--repo",
                    str(root),
                    "--history",
                    "--json",
                ],
                capture_output=True,
                text=True,
            )
            times.append(time.perf_counter() - start)
            assert run.returncode in (0, 1), run.stderr
        import json

        columns = len(json.loads(run.stdout)["columns"])
    print(
        f"repo: {shape['commits']} commits ({shape['merges']} merges), {shape['branches']} branches, "
        f"{shape['pins']} pins -> {columns} columns"
    )
    print(
        f"compare-pins --history (whole CLI process): best {min(times):.2f}s, "
        f"median {sorted(times)[len(times) // 2]:.2f}s over {args.repeat} runs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
