"""Sequence vs shift vs tensor parallelism on two GPUs, side by side in one run.

Starts one resident engine per configuration (TP=2; SP=2; SP=2 with shift),
then runs the phases interleaved: every repetition visits each configuration in
a rotated order, each phase timed for at least ``--min-s`` seconds. Reports the
median over repetitions with min and max, and ratios against TP=2:

* ``ttft16k``: time to first token of one 16k-token prompt (seconds, lower is better);
* ``decode64``: output tokens/s of 64 concurrent short requests (higher is better).

SP engines run full CUDA graphs without torch.compile (all SP can capture), TP=2 runs
vLLM's default graphs; `--eager` runs all three eagerly. Usage on a 2-GPU machine:
    ARCTIC_INFERENCE_ENABLED=1 python bench/sp/sp_bench.py --model PATH --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).with_name("sp_engine.py")
CONFIGS = {
    "tp2": ["--tp", "2", "--sp", "1"],
    "sp2": ["--tp", "1", "--sp", "2"],
    "shift": ["--tp", "1", "--sp", "2", "--shift"],
}
PHASES = ("ttft16k", "decode64")


def start(name: str, model: str, eager: bool = False) -> subprocess.Popen:
    env = dict(os.environ, ARCTIC_INFERENCE_ENABLED="1", PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, str(ENGINE), "--model", model, *CONFIGS[name]]
        + (["--eager"] if eager else []),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def ask(proc: subprocess.Popen, command: dict) -> dict:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(command) + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def summarise(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--min-s", type=float, default=10.0)
    parser.add_argument(
        "--eager",
        action="store_true",
        help="every engine eager (default: SP engines with full CUDA graphs, TP=2 vLLM's default)",
    )
    args = parser.parse_args()
    if args.reps < 5 or args.min_s < 10:
        parser.error("--reps must be >= 5 and --min-s >= 10 (the bench standard)")
    args.out.mkdir(parents=True, exist_ok=True)

    engines = {}
    for name in CONFIGS:  # started one after another: each measures its free memory
        proc = start(name, args.model, args.eager)
        assert proc.stdout is not None
        first = proc.stdout.readline()
        engines[name] = proc
        if "refused" in first:
            print(f"{name}: {first.strip()}", flush=True)
    names = list(CONFIGS)
    values: dict[str, dict[str, list[float]]] = {n: {p: [] for p in PHASES} for n in names}
    refused: dict[str, str] = {}
    for rep in range(args.reps):
        order = names[rep % len(names) :] + names[: rep % len(names)]
        for phase in PHASES:
            for name in order:
                answer = ask(engines[name], {"phase": phase, "min_s": args.min_s})
                if "refused" in answer:
                    refused[name] = answer["refused"]
                    continue
                values[name][phase].append(answer["value"])
                print(f"rep {rep} {phase} {name}: {answer}", flush=True)
    for proc in engines.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=120)

    report = {
        "reps": args.reps,
        "min_s": args.min_s,
        "eager": args.eager,
        "refused": refused,
        "results": {n: {p: summarise(v) for p, v in values[n].items() if v} for n in names},
    }
    tp = report["results"].get("tp2", {})
    for phases in report["results"].values():
        for phase, summary in phases.items():
            if phase in tp:
                summary["ratio_vs_tp2"] = summary["median"] / tp[phase]["median"]
    (args.out / "sp_bench.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
