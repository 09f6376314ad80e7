"""Forest Cascade Attention benchmark on the GPU: three workloads x three configurations.

One engine per configuration (``forest_engine.py`` in its own process), all three alive
for the run, each with its share of GPU memory. Per workload: every engine runs one
untimed warm-up round and one sizing round; the round count of a timed phase is then
chosen so the fastest engine's phase lasts ``--phase-s``, and every phase runs at least
that many rounds and on until it has lasted ``--phase-s`` (a rate per phase, so engines
may run different counts of the same round); then ``--reps`` repetitions with the
configuration order rotated each time (flash cascade forest, cascade forest flash,
forest flash cascade, ...). A finished
workload's runs land in ``--runs/<workload>.json``, so a session cut short
(``--budget-s``) resumes with the workloads still missing. The report gives, per
workload and configuration, the median tokens/s with min and max, the ratio to
``flash`` within each repetition (median, min, max), and for the rollouts the profiled
attention-kernel time per decode step with the KV traffic it implies against the H200's
bandwidth, and how far the repetitions spread, (max - min) / median, with the most of
any phase spent in stalled rounds (each phase keeps its rounds' times,
``bench/phase.py``). ``flash`` and ``cascade`` run with the plugin off (vLLM's own FlashAttention);
``forest`` with it on. ``--with-fork`` adds a fourth engine, ``fork``: the plugin on
without a forest config, so ``fork / flash`` is the plugin's own cost per step and
``forest / fork`` forest's alone.

    python3 bench/forest/build_model.py --out /opt/models/small-llama-8k
    python3 bench/forest/forest_speed.py --model /opt/models/small-llama-8k \\
        --runs bench/forest/runs --out bench/forest/results.json --md bench/forest/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from engine_proc import EngineProcess, engine_cpus  # noqa: E402
from forest_engine import CONFIGS, PLUGIN_ON, SEEDED_SAMPLING  # noqa: E402
from forest_workloads import make_workloads, shared_prefix_tokens  # noqa: E402
from phase import STALL_FACTOR, most_stalled, spread  # noqa: E402

H200_BANDWIDTH_GBS = 4800.0  # HBM3e, vendor figure


def _env(config: str, in_process: bool = False) -> dict[str, str]:
    """The engine's environment: the baselines are vLLM's own FlashAttention, so the
    plugin (which installs the FlashAttention fork whenever it is on) is off for them.

    By default the engine keeps vLLM's own layout, the engine core in a process of its
    own (``VLLM_ENABLE_V1_MULTIPROCESSING=1``), where output processing overlaps the
    engine's steps; ``in_process`` runs the core in the engine script's process (needed
    by the profiler, which sees only its own process's kernels)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCTIC_")}
    env.update(
        ARCTIC_INFERENCE_ENABLED="1" if config in PLUGIN_ON else "0",
        VLLM_ENABLE_V1_MULTIPROCESSING="0" if in_process else "1",
        VLLM_USE_V2_MODEL_RUNNER="0",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    # The engine core imports the stats extension (forest_stats_ext) by name.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    return env


def bench_configs(with_fork: bool) -> tuple[str, ...]:
    """The engines of a run, in start (and first-repetition) order."""
    return CONFIGS if with_fork else tuple(c for c in CONFIGS if c != "fork")


def default_gpu_util(engines: int) -> float:
    """Each engine's share of GPU memory: the engines share the GPU, 0.84 of it in all
    (0.28 each for three, as every run before the fork engine; 0.21 each for four)."""
    return round(0.84 / engines, 2)


def start_engines(args, cpus: list[set[int] | None]) -> list[EngineProcess]:
    """One after another: vLLM sizes its KV cache from the memory free while it profiles.
    ``cpus``: each configuration's CPU set, in ``bench_configs`` order (None: not pinned)."""
    engines = []
    configs = bench_configs(args.with_fork)
    util = args.gpu_util if args.gpu_util is not None else default_gpu_util(len(configs))
    for config, pinned in zip(configs, cpus, strict=True):
        argv = [str(HERE / "forest_engine.py"), "--model", args.model, "--config", config]
        argv += ["--gpu-util", str(util)]
        if args.cudagraph_mode:
            argv += ["--cudagraph-mode", args.cudagraph_mode]
        if args.forest_full_graphs and config == "forest":
            argv += ["--forest-full-graphs"]
        log = args.runs / f"engine-{config}.log"
        engine = EngineProcess(config, argv, log, env=_env(config, args.in_process), cpus=pinned)
        print(f"engine {config} up in {engine.info['engine_start_s']} s", flush=True)
        engines.append(engine)
    return engines


def measure_workload(args, engines: list[EngineProcess], name: str, deadline: float) -> dict | None:
    """Warm up, size the phase, then ``reps`` rotated phases of every configuration.

    A phase runs at least ``rounds`` rounds (sized so the fastest engine's phase lasts
    ``--phase-s``) and goes on until it has lasted ``--phase-s``.

    None when the timed repetitions, estimated from the sizing round, would end after
    ``deadline`` (the workload is left for a later call)."""
    for engine in engines:
        engine.run(workload=name, rounds=1)  # warm-up: new shapes, prefix cache filled
    sizing = {e.name: e.run(workload=name, rounds=1)["elapsed_s"] for e in engines}
    rounds = max(1, math.ceil(1.02 * args.phase_s / min(sizing.values())))
    estimate = 1.1 * args.reps * rounds * sum(sizing.values())
    if time.time() + estimate > deadline:
        print(f"{name}: needs about {estimate:.0f} s more, left for a later call", flush=True)
        return None
    runs: list[dict] = []
    for rep in range(args.reps):
        shift = rep % len(engines)
        for engine in engines[shift:] + engines[:shift]:
            result = engine.run(workload=name, rounds=rounds, min_s=args.phase_s)
            runs.append({"rep": rep, "config": engine.name, **result})
            print(
                f"{name} rep {rep} {engine.name}: {result['tokens_per_s']:.0f} tok/s "
                f"({result['elapsed_s']:.1f} s, forest steps {result['forest_planned_steps']}, "
                f"in full graphs {result.get('forest_full_graph_steps', 0)})",
                flush=True,
            )
    return {
        "workload": name,
        "rounds": rounds,
        "sizing_s": sizing,
        "runs": runs,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        **run_setting(args),
    }


def run_setting(args) -> dict[str, bool | int]:
    """What a saved run was measured with, beyond the workload: a resumed report must
    not mix settings."""
    return {
        "forest_full_graphs": bool(args.forest_full_graphs),
        "engine_core_process": not args.in_process,
        "seeded_sampling": SEEDED_SAMPLING,
        "pinned_cpus": int(args.pin_cpus),
        "fork_engine": bool(args.with_fork),
    }


# Records written before a setting existed were measured with the engine in-process,
# forest's dynamic plans and seeded, detokenized sampling.
SETTING_BEFORE_RECORDED = {
    "forest_full_graphs": False,
    "engine_core_process": False,
    "seeded_sampling": True,
    "pinned_cpus": 0,
    "fork_engine": False,
}


def mismatched_runs(records: dict[str, dict], setting: dict[str, bool | int]) -> list[str]:
    """Workloads whose saved runs were measured with another setting than ``setting``."""
    return sorted(
        name
        for name, record in records.items()
        if any(
            bool(record.get(key, SETTING_BEFORE_RECORDED[key])) != value
            for key, value in setting.items()
        )
    )


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


#: Ratios the report takes within each repetition: both against ``flash``, forest against
#: vLLM's own cascade (the one-prefix workload's target is forest >= cascade), and, with
#: the fork engine, the plugin's own cost (fork / flash) and forest's alone (forest / fork).
RATIOS = (
    ("cascade", "flash"),
    ("forest", "flash"),
    ("forest", "cascade"),
    ("fork", "flash"),
    ("forest", "fork"),
)


def _stats(values: list[float]) -> dict:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
        "spread": spread(values),
    }


def summarize(measured: dict[str, dict], profiles: dict, model: str) -> dict:
    out: dict = {"workloads": {}}
    for name, record in measured.items():
        runs = record["runs"]
        entry: dict = {"rounds": record["rounds"]}
        for config in CONFIGS:
            values = [r["tokens_per_s"] for r in runs if r["config"] == config]
            if values:
                entry[config] = _stats(values)
            entry[f"{config}_phase_s"] = [
                round(r["elapsed_s"], 1) for r in runs if r["config"] == config
            ]
            entry[f"{config}_forest_steps"] = sum(
                r["forest_planned_steps"] for r in runs if r["config"] == config
            )
            if values:
                entry[f"{config}_stall_share_max"] = most_stalled(
                    [r.get("stall_share") for r in runs if r["config"] == config]
                )
        by_rep = {(r["rep"], r["config"]): r["tokens_per_s"] for r in runs}
        reps = sorted({r["rep"] for r in runs})
        for config, base in RATIOS:
            ratios = [
                by_rep[rep, config] / by_rep[rep, base]
                for rep in reps
                if (rep, config) in by_rep and (rep, base) in by_rep
            ]
            if ratios:
                entry[f"{config}_vs_{base}"] = _stats(ratios)
        out["workloads"][name] = entry
    out["rollouts_profile"] = {}
    for config, prof in profiles.items():
        moved = kv_bytes_per_step(model, config)
        seconds = prof["attention_us_per_step"] * 1e-6
        gbs = moved / seconds / 1e9 if seconds else None
        out["rollouts_profile"][config] = {
            **prof,
            "kv_bytes_per_step": moved,
            "implied_gb_s": gbs,
            "share_of_h200_bandwidth": gbs / H200_BANDWIDTH_GBS if gbs else None,
        }
    return out


def _shown(summary: dict) -> tuple[tuple[str, ...], list[tuple[str, str]]]:
    """The configurations and ratios a report shows: the fork's only when it ran."""
    configs = bench_configs(any("fork" in entry for entry in summary["workloads"].values()))
    return configs, [(a, b) for a, b in RATIOS if a in configs and b in configs]


def markdown(summary: dict) -> str:
    configs, ratios = _shown(summary)
    lines = [
        "# Forest Cascade Attention on one H200",
        "",
        "Generated tokens/s, median (min-max) over interleaved repetitions; ratios to `flash` "
        "within each repetition. Produced by `bench/forest/forest_speed.py`. `flash` and "
        "`cascade` run with the plugin off (vLLM's own FlashAttention), "
        + " and ".join(f"`{c}`" for c in configs if c in PLUGIN_ON)
        + " with it on.",
        "",
        "| workload | "
        + " | ".join(configs)
        + " | "
        + " | ".join(f"{a} / {b}" for a, b in ratios)
        + " | rounds per phase (at least), shortest phase "
        + f"| forest-planned steps ({', '.join(configs)}) |",
        "|---" * (len(configs) + len(ratios) + 3) + "|",
    ]
    for name, entry in summary["workloads"].items():
        cells = []
        for config in configs:
            v = entry.get(config)
            cells.append(f"{v['median']:.0f} ({v['min']:.0f}-{v['max']:.0f})" if v else "-")
        for config, base in ratios:
            v = entry.get(f"{config}_vs_{base}")
            cells.append(f"x{v['median']:.2f} ({v['min']:.2f}-{v['max']:.2f})" if v else "-")
        shortest = min((s for c in configs for s in entry[f"{c}_phase_s"]), default=0.0)
        cells.append(f"{entry['rounds']}, {shortest:.1f} s")
        cells.append(", ".join(str(entry[f"{c}_forest_steps"]) for c in configs))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Spread of the repetitions, (max - min) / median, and the most of any phase"
        f" spent in stalled rounds (slower than {STALL_FACTOR}x the phase's median round):",
        "",
    ]
    for name, entry in summary["workloads"].items():
        parts = [
            f"{a} / {b} {entry[f'{a}_vs_{b}']['spread']:.0%}"
            for a, b in ratios
            if f"{a}_vs_{b}" in entry
        ]
        for config in configs:
            share = entry.get(f"{config}_stall_share_max")
            if config in entry:
                parts.append(f"{config} stalls {'unknown' if share is None else f'{share:.0%}'}")
        lines.append(f"- {name}: " + ", ".join(parts))
    resumed = summary.get("resumed") or {}
    if resumed:
        lines += [
            "",
            "**Not measured in this call**, resumed from saved runs: "
            + "; ".join(f"{n} (measured {when})" for n, when in resumed.items())
            + ".",
        ]
    if summary["rollouts_profile"]:
        lines += [
            "",
            "Rollouts, one profiled round per engine after the timed repetitions:",
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
        hosts = {c: p["host"] for c, p in summary["rollouts_profile"].items() if p.get("host")}
        if hosts:
            lines += [
                "",
                "Host time of one more rollouts round under cProfile (ms per decode step; the "
                "profiler slows Python, read the shares), the five largest self times:",
                "",
            ]
            for config, host in hosts.items():
                top = ", ".join(
                    f"`{r['function']}` {r['self_ms_per_step']:.2f}"
                    for r in host["by_self_time"][:5]
                )
                wall = host["wall_ms_per_step_under_cprofile"]
                lines.append(f"- {config}: {wall:.1f} ms a step under the profiler; {top}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--phase-s", type=float, default=10.0)
    parser.add_argument("--workloads", default="rollouts,sysprompt,noshare")
    parser.add_argument(
        "--gpu-util",
        type=float,
        default=None,
        help="GPU memory share of each engine (default: 0.84 split among the engines)",
    )
    parser.add_argument(
        "--with-fork",
        action="store_true",
        help="a fourth engine, the plugin on without a forest config: the plugin's own "
        "cost per step (fork / flash) apart from forest's (forest / fork)",
    )
    parser.add_argument(
        "--cudagraph-mode",
        default=None,
        help="one mode for every configuration (default: vLLM's)",
    )
    parser.add_argument(
        "--forest-full-graphs",
        action="store_true",
        help='add "full_cuda_graphs": true to the forest engine\'s config (static plans '
        "inside the uniform-decode full graphs; needs full-and-piecewise graphs, vLLM's default)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run each engine core in its engine script's process "
        "(VLLM_ENABLE_V1_MULTIPROCESSING=0); the rollouts profile needs it",
    )
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument(
        "--pin-cpus",
        type=int,
        default=0,
        metavar="K",
        help="give each engine (and the engine core it starts) K host cores of its own",
    )
    parser.add_argument("--runs", type=Path, default=HERE / "runs")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=float("inf"),
        help="start no workload that would end after this many seconds (resume later)",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--md", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.reps < 5 or args.phase_s < 10:
        print("note: fewer than 5 repetitions or phases under 10 s are not a measurement")
    try:
        cpus = engine_cpus(len(bench_configs(args.with_fork)), args.pin_cpus)
    except ValueError as err:
        print(f"error: --pin-cpus: {err}", file=sys.stderr)
        return 2
    args.runs.mkdir(parents=True, exist_ok=True)
    names = args.workloads.split(",")
    done = lambda n: (args.runs / f"{n}.json").is_file()  # noqa: E731
    saved = {n: json.loads((args.runs / f"{n}.json").read_text()) for n in names if done(n)}
    other = mismatched_runs(saved, run_setting(args))
    if other:
        print(
            f"{args.runs} holds runs of {', '.join(other)} measured with another setting "
            "(--forest-full-graphs, --in-process, --pin-cpus, --with-fork, or the sampling "
            "of an older bench); give another --runs folder",
            file=sys.stderr,
        )
        return 2
    profile_path = args.runs / "rollouts-profile.json"
    want_profile = not args.no_profile and "rollouts" in names
    if want_profile and not args.in_process:
        print("note: the rollouts profile needs --in-process; not profiled", flush=True)
        want_profile = False
    pending = [n for n in names if not done(n)]
    start = time.time()
    if pending or (want_profile and not profile_path.is_file()):
        engines = start_engines(args, cpus)
        try:
            deadline = start + args.budget_s
            for name in pending:
                # At least 3 x reps phases: not worth warming up for when less time is left.
                if time.time() + len(engines) * args.reps * args.phase_s > deadline:
                    print(f"{name}: left for a later call (budget)", flush=True)
                    continue
                record = measure_workload(args, engines, name, deadline)
                if record is not None:
                    (args.runs / f"{name}.json").write_text(json.dumps(record, indent=1))
            if want_profile and done("rollouts") and not profile_path.is_file():
                profiles = {
                    e.name: e.run(workload="rollouts", profile=True)["profile"] for e in engines
                }
                profile_path.write_text(json.dumps(profiles, indent=1))
        finally:
            for engine in engines:
                engine.close()
    measured = {n: json.loads((args.runs / f"{n}.json").read_text()) for n in names if done(n)}
    profiles = json.loads(profile_path.read_text()) if profile_path.is_file() else {}
    complete = len(measured) == len(names) and (profiles or not want_profile)
    summary = summarize(measured, profiles, args.model)
    # A workload saved by an earlier call is reported, never passed off as this call's.
    summary["resumed"] = {
        n: saved[n].get("measured_at", "before saved runs recorded a time") for n in saved
    }
    summary["complete"] = bool(complete)
    summary.update(run_setting(args))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))
    setting = (
        '\nForest config: `{"full_cuda_graphs": true}` (static plans in the full decode graphs).\n'
        if args.forest_full_graphs
        else ""
    ) + (
        "\nEngine cores in the engine scripts' processes (`--in-process`).\n"
        if args.in_process
        else "\nEngine cores in processes of their own (vLLM's default layout).\n"
    )
    text = (
        markdown(summary)
        + setting
        + ("" if complete else "\n**Incomplete: some workloads are not measured yet.**\n")
    )
    if args.md:
        args.md.write_text(text)
    print(text)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
