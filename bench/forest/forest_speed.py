"""Forest Cascade Attention benchmark on the GPU: three workloads x three configurations.

Each (repetition, configuration) is a fresh engine in its own process
(``forest_engine.py``), run in interleaved order (flash cascade forest flash cascade forest
...), at least 5 repetitions, every timed phase at least 10 s. Each run's JSON lands in
``--runs`` as it finishes, so a session cut short (``--budget-s``) resumes where it
stopped. The report gives, per workload and configuration, the median tokens/s with min
and max, the ratio to ``flash`` measured within each repetition (median, min, max), and
for the rollouts the profiled attention-kernel time per decode step with the KV traffic
it implies against the H200's bandwidth. ``flash`` and ``cascade`` run with the plugin
off (vLLM's own FlashAttention); ``forest`` with it on.

    python3 bench/forest/build_model.py --out /opt/models/small-llama-8k
    python3 bench/forest/forest_speed.py --model /opt/models/small-llama-8k \\
        --runs bench/forest/runs --out bench/forest/results.json --md bench/forest/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from forest_engine import CONFIGS  # noqa: E402
from forest_workloads import make_workloads, shared_prefix_tokens  # noqa: E402

H200_BANDWIDTH_GBS = 4800.0  # HBM3e, vendor figure


def _env(config: str) -> dict[str, str]:
    """The engine's environment: the baselines are vLLM's own FlashAttention, so the
    plugin (which installs the FlashAttention fork whenever it is on) is off for them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCTIC_")}
    env.update(
        ARCTIC_INFERENCE_ENABLED="1" if config == "forest" else "0",
        VLLM_ENABLE_V1_MULTIPROCESSING="0",
        VLLM_USE_V2_MODEL_RUNNER="0",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def run_one(args, rep: int, config: str) -> dict | None:
    path = args.runs / f"rep{rep}-{config}.json"
    if path.is_file():
        return json.loads(path.read_text())
    cmd = [
        sys.executable,
        str(HERE / "forest_engine.py"),
        "--model",
        args.model,
        "--config",
        config,
        "--phase-s",
        str(args.phase_s),
        "--workloads",
        args.workloads,
    ]
    if args.cudagraph_mode:
        cmd += ["--cudagraph-mode", args.cudagraph_mode]
    if rep == 0:
        cmd.append("--profile")
    log = args.runs / f"rep{rep}-{config}.log"
    with open(log, "w") as handle:
        proc = subprocess.run(
            cmd, env=_env(config), stdout=handle, stderr=subprocess.STDOUT, timeout=900
        )
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        print(f"rep {rep} {config}: failed (rc {proc.returncode}), see {log}", flush=True)
        return None
    result = json.loads(lines[-1][len("RESULT ") :])
    result["rep"] = rep
    path.write_text(json.dumps(result, indent=1))
    return result


def kv_bytes_per_step(model_dir: str, config: str) -> float:
    """KV bytes one decode step reads for the rollouts (mid-generation lengths)."""
    shape = json.loads((Path(model_dir) / "config.json").read_text())
    per_token = (
        shape["num_hidden_layers"]
        * 2
        * shape["num_key_value_heads"]
        * (shape["hidden_size"] // shape["num_attention_heads"])
        * 2
    )
    workload = make_workloads()["rollouts"]
    mid = workload.new_tokens / 2
    tokens = 0.0
    for (members, shared), prompt in zip(
        shared_prefix_tokens(workload), workload.prompts, strict=True
    ):
        own = len(prompt) - shared + mid
        tokens += (shared + members * own) if config == "forest" else members * (shared + own)
    return tokens * per_token


def summarize(runs: list[dict], model: str) -> dict:
    out: dict = {"workloads": {}, "reps": sorted({r["rep"] for r in runs})}
    names = sorted({w for r in runs for w in r["workloads"]})
    for name in names:
        entry: dict = {}
        for config in CONFIGS:
            values = [
                r["workloads"][name]["tokens_per_s"]
                for r in runs
                if r["config"] == config and name in r["workloads"]
            ]
            if values:
                entry[config] = {
                    "median": statistics.median(values),
                    "min": min(values),
                    "max": max(values),
                    "n": len(values),
                }
        for config in ("cascade", "forest"):
            ratios = []
            for rep in out["reps"]:
                base = [r for r in runs if r["rep"] == rep and r["config"] == "flash"]
                other = [r for r in runs if r["rep"] == rep and r["config"] == config]
                if (
                    base
                    and other
                    and name in base[0]["workloads"]
                    and name in other[0]["workloads"]
                ):
                    ratios.append(
                        other[0]["workloads"][name]["tokens_per_s"]
                        / base[0]["workloads"][name]["tokens_per_s"]
                    )
            if ratios:
                entry[f"{config}_vs_flash"] = {
                    "median": statistics.median(ratios),
                    "min": min(ratios),
                    "max": max(ratios),
                    "n": len(ratios),
                }
        out["workloads"][name] = entry
    profiles = {}
    for r in runs:
        prof = r["workloads"].get("rollouts", {}).get("profile")
        if prof:
            moved = kv_bytes_per_step(model, r["config"])
            seconds = prof["attention_us_per_step"] * 1e-6
            profiles[r["config"]] = {
                **prof,
                "kv_bytes_per_step": moved,
                "implied_gb_s": moved / seconds / 1e9 if seconds else None,
                "share_of_h200_bandwidth": (moved / seconds / 1e9 / H200_BANDWIDTH_GBS)
                if seconds
                else None,
            }
    out["rollouts_profile"] = profiles
    return out


def markdown(summary: dict) -> str:
    lines = [
        "# Forest Cascade Attention on one H200",
        "",
        "Generated tokens/s, median (min-max) over fresh engines; ratios to `flash` within each "
        "repetition. Produced by `bench/forest/forest_speed.py`. `flash` and `cascade` run "
        "with the plugin off (vLLM's own FlashAttention), `forest` with it on.",
        "",
        "| workload | flash | cascade | forest | cascade / flash | forest / flash |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in summary["workloads"].items():
        cells = []
        for config in CONFIGS:
            v = entry.get(config)
            cells.append(f"{v['median']:.0f} ({v['min']:.0f}-{v['max']:.0f})" if v else "-")
        for config in ("cascade", "forest"):
            v = entry.get(f"{config}_vs_flash")
            cells.append(f"x{v['median']:.2f} ({v['min']:.2f}-{v['max']:.2f})" if v else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if summary["rollouts_profile"]:
        lines += [
            "",
            "Rollouts, profiled round (repetition 0):",
            "",
            "| config | attention kernels µs / decode step | index+gather µs / step | "
            "KV MB / step | implied GB/s | of H200 bandwidth |",
            "|---|---|---|---|---|---|",
        ]
        for config, p in summary["rollouts_profile"].items():
            gbs = p["implied_gb_s"]
            lines.append(
                f"| {config} | {p['attention_us_per_step']:.0f} | {p['index_gather_us_per_step']:.0f} | "
                f"{p['kv_bytes_per_step'] / 1e6:.0f} | {gbs:.0f} | {p['share_of_h200_bandwidth']:.0%} |"
                if gbs
                else f"| {config} | - | - | - | - | - |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--phase-s", type=float, default=10.0)
    parser.add_argument("--workloads", default="rollouts,sysprompt,noshare")
    parser.add_argument(
        "--cudagraph-mode",
        default=None,
        help="one mode for every configuration (default: forest PIECEWISE, others vLLM's)",
    )
    parser.add_argument("--runs", type=Path, default=HERE / "runs")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=float("inf"),
        help="start no new engine after this many seconds (resume later)",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--md", type=Path, default=None)
    args = parser.parse_args()
    if args.reps < 5 or args.phase_s < 10:
        print(
            "note: fewer than 5 repetitions or phases under 10 s are not a measurement", flush=True
        )
    args.runs.mkdir(parents=True, exist_ok=True)
    start, runs, complete = time.time(), [], True
    for rep in range(args.reps):
        for config in CONFIGS:
            if (
                time.time() - start > args.budget_s
                and not (args.runs / f"rep{rep}-{config}.json").is_file()
            ):
                complete = False
                continue
            result = run_one(args, rep, config)
            if result is not None:
                runs.append(result)
                print(
                    f"rep {rep} {config}: "
                    + ", ".join(
                        f"{w} {v['tokens_per_s']:.0f} tok/s" for w, v in result["workloads"].items()
                    ),
                    flush=True,
                )
            else:
                complete = False
    summary = summarize(runs, args.model)
    summary["complete"] = complete
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))
    text = markdown(summary) + (
        "" if complete else "\n**Incomplete: some runs are missing or failed.**\n"
    )
    if args.md:
        args.md.write_text(text)
    print(text)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
