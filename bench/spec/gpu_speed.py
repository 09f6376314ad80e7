"""Arctic speculator vs no speculation, suffix and hybrid, side by side on one GPU.

Every configuration is one engine process kept alive for the whole run (this
script re-invoked with ``--serve``, JSON commands over stdin/stdout), so phases
interleave A B C ... A B C without rebuilding engines. Workloads:

* ``one``: requests one at a time (latency-bound; where drafting pays most);
* ``batch32``: 32 concurrent requests (compute-bound; where drafting can cost).

Prompts re-quote earlier spans of their context half of the time (the copy
workload copy-llama is trained for) and are fresh random text otherwise. A
phase runs rounds of the workload until it has lasted ``--min-phase`` seconds;
round k of repetition r uses the same fresh prompts in every engine, and no
prompt is served twice (a suffix cache that has seen a request's earlier
answer drafts it whole, which measures a replay, not the workload). Per phase: generated tokens / s, and from vLLM's counters the
drafts, drafted and accepted tokens (accepted tokens per step = 1 + accepted /
drafts; draft acceptance = accepted / drafted); for the arctic engines the
proposer's own time per call (``ArcticProposer.timing``); and each round's wall time,
with the share of the phase spent in rounds far slower than its median one
(``bench/phase.py``), so that a repetition that disagrees with the others shows whether
a few rounds stalled or the whole phase ran slower. The summary gives the spread of the
repetitions, (max - min) / median, of each speedup and of each engine's own rate.

``suffix-piecewise`` is ``suffix`` with ``cudagraph_mode=FULL_AND_PIECEWISE``, vLLM's
default, which the plugin replaces by ``FULL`` for arctic and suffix engines
(``arctic_inference/vllm/spec_dec/graph_mode.py``); the row measures that choice. Each
phase records the graph mode the engine's model runner resolved.

``arctic-mlp-always`` and ``hybrid-always`` are those engines without the cost rule
(``disable_by_cost=False``: the speculator drafts every step it may), so each pair
measures the rule; each phase records the share of steps the rule withheld the
speculator's drafts, and the share where it withheld every draft (in hybrid, suffix
drafts too).

``none-sync`` is ``none`` with vLLM's asynchronous scheduling off. vLLM turns that
scheduling off for every speculative method outside EAGLE/MTP/draft-model/n-gram
on the GPU, so each speculating engine here runs without it; the row tells how much
of a speculating engine's gap to ``none`` is that and not drafting.

``--budget S`` ends the run (exit 75) before a repetition that would not fit in S
seconds; run the same command again and it resumes from the repetitions already in
``--out`` (the run's arguments must be the same). The report keeps each call's engine
start-up, its longest warm-up and its longest repetition (warm-up apart: it comes once a
call), so a resumed call whose budget cannot hold the three exits 2 before it starts any
engine, instead of paying the start-up for nothing.

vLLM 0.26.0's built-in ``mlp_speculator`` cannot be the anchor row: its V1 model
runner has no proposer for that method (``GPUModelRunner`` raises "Unknown
speculative decoding method"), the ``MLPSpeculatorPreTrainedModel`` entry of the
model registry is commented out, and the model class keeps only ``__init__`` and
``load_weights`` (no proposal loop), so there is no vLLM number to compare.

    python bench/spec/gpu_speed.py --model /opt/models/copy-llama \\
        --mlp /tmp/spec/copy-mlp --lstm /tmp/spec/copy-lstm --out bench/spec/gpu_copy.json
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine_proc import EngineProcess, engine_cpus  # noqa: E402
from host_profile import STEP_FUNCTION, host_profile  # noqa: E402
from phase import most_stalled, spread, timed_phase  # noqa: E402

WORKLOADS = {"one": 1, "batch32": 32}
COUNTERS = {
    "vllm:spec_decode_num_drafts": "drafts",
    "vllm:spec_decode_num_draft_tokens": "drafted",
    "vllm:spec_decode_num_accepted_tokens": "accepted",
}


# Engine arguments beyond the speculative config, per configuration.
ENGINE_ARGS = {
    "none-sync": {"async_scheduling": False},
    # vLLM's default graph mode, which the plugin turns into FULL for a speculating
    # engine: full decode graphs for 1 + k tokens per request only, piecewise graphs for
    # a step where some request drafts less (or the batch cap drafts nothing).
    "suffix-piecewise": {"compilation_config": {"cudagraph_mode": "FULL_AND_PIECEWISE"}},
}
RESUMABLE = 75  # the exit status of a run its budget stopped (see tests/gpu/session.sh)


def spec_configs(args) -> dict[str, dict | None]:
    configs: dict[str, dict | None] = {"none": None, "none-sync": None}
    if args.mlp:
        configs["arctic-mlp"] = {"method": "arctic", "model": args.mlp}
    if args.lstm:
        configs["arctic-lstm"] = {"method": "arctic", "model": args.lstm}
    configs["suffix"] = {"method": "suffix", "num_speculative_tokens": args.suffix_tokens}
    configs["suffix-piecewise"] = dict(configs["suffix"])
    if args.mlp or args.lstm:
        # The hybrid takes the MLP where there is one: on copy-llama it is the speculator
        # whose drafts are accepted more (11.8 % vs the LSTM's 7.2 %, 2026-12-02), and the
        # one the GPU tests' hybrid serves.
        configs["hybrid"] = {
            "method": "arctic",
            "model": args.mlp or args.lstm,
            "enable_suffix_decoding": True,
            "num_speculative_tokens": args.suffix_tokens,
        }
    # The same speculators drafting every step, without the cost rule (disable_by_cost):
    # the pair of rows measures that rule.
    for name in ("arctic-mlp", "hybrid"):
        if name in configs:
            configs[f"{name}-always"] = dict(configs[name], disable_by_cost=False)
    for cfg in configs.values():
        if cfg is not None and args.disable_by_batch_size:
            cfg["disable_by_batch_size"] = args.disable_by_batch_size
    # The speculator's engine capped at one request, so it never drafts: what a step
    # without drafts costs an engine built to speculate, set beside none and none-sync.
    if "arctic-mlp" in configs:
        configs["arctic-mlp-never"] = dict(configs["arctic-mlp"], disable_by_batch_size=1)
    return configs


def select_configs(configs: dict[str, dict | None], wanted: str) -> dict[str, dict | None]:
    """The configurations ``--configs`` names, in run order; every ratio needs ``none``."""
    if not wanted:
        return configs
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    unknown = [n for n in names if n not in configs]
    if unknown:
        raise ValueError(f"unknown {', '.join(unknown)}; this run offers {', '.join(configs)}")
    if "none" not in names:
        raise ValueError("it must name none: every speedup is against that repetition's none")
    return {n: c for n, c in configs.items() if n in names}


def prompts_for(vocab: int, n: int, length: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        doc = [rng.randrange(4, vocab) for _ in range(length)]
        if i % 2 == 0:
            start = rng.randrange(0, length // 2)
            doc += doc[start : start + length // 4]
        out.append(doc)
    return out


def round_seed(rep_seed: int, round_index: int) -> int:
    """Prompt seed of one round: distinct for every (repetition, round), equal across engines."""
    return rep_seed * 100_000 + round_index


def _graph_mode(worker) -> str:
    mode = worker.model_runner.compilation_config.cudagraph_mode
    return str(getattr(mode, "name", mode))


def _proposer_timing(worker) -> dict:
    drafter = getattr(worker.model_runner, "drafter", None)
    return dict(getattr(drafter, "timing", {}) or {})


def serve(model: str, spec: dict | None, gpu_util: float, engine_args: dict) -> None:
    """Engine process: answer one JSON line per command read from stdin."""
    os.environ.setdefault("ARCTIC_INFERENCE_ENABLED", "1")  # the plugin serves "arctic"
    os.environ.setdefault("VLLM_USE_V2_MODEL_RUNNER", "0")
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    kw = dict(
        model=model, dtype="bfloat16", gpu_memory_utilization=gpu_util, seed=0,
        max_model_len=2048, skip_tokenizer_init=True, disable_log_stats=False,
    )  # fmt: skip
    if spec:
        kw["speculative_config"] = spec
    llm = LLM(**kw, **engine_args)
    vocab = int(json.loads((Path(model) / "config.json").read_text())["vocab_size"])

    def counters() -> dict:
        got = dict.fromkeys(COUNTERS.values(), 0.0)
        for m in llm.get_metrics():
            if m.name in COUNTERS:
                got[COUNTERS[m.name]] += float(m.value)
        return got

    def one_round(cmd: dict, sp, seed: int) -> int:
        prompts = prompts_for(vocab, cmd["batch"], cmd["prompt_len"], seed)
        outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], sp, use_tqdm=False)
        return sum(len(o.outputs[0].token_ids) for o in outs)

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        sp = SamplingParams(temperature=0.0, max_tokens=cmd["max_tokens"], ignore_eos=True)
        if cmd.get("profile"):
            # One more round under cProfile, its steps counted by the runner's calls.
            try:
                answer = {"profile": host_profile(
                    functools.partial(one_round, cmd, sp, round_seed(cmd["seed"], 0)),
                    step_function=STEP_FUNCTION,
                )}  # fmt: skip
            except ValueError as err:  # no step seen: say so, keep serving
                answer = {"profile": {"error": str(err)}}
            print(json.dumps(answer), flush=True)
            continue
        before, t_before = counters(), llm.collective_rpc(_proposer_timing)[0]
        phase = timed_phase(
            lambda k, cmd=cmd, sp=sp: one_round(cmd, sp, round_seed(cmd["seed"], k)),
            min_seconds=cmd["min_seconds"],
        )
        after, t_after = counters(), llm.collective_rpc(_proposer_timing)[0]
        delta = {k: after[k] - before[k] for k in after}
        spent = {k: t_after.get(k, 0) - t_before.get(k, 0)
                 for k in ("calls", "seconds", "withheld", "undrafted")}  # fmt: skip
        calls = spent["calls"]
        print(json.dumps({
            **phase.record(),
            "propose_ms": 1000 * spent["seconds"] / calls if calls else None,
            "withheld_share": spent["withheld"] / calls if calls else None,
            "undrafted_share": spent["undrafted"] / calls if calls else None,
            "cudagraph_mode": llm.collective_rpc(_graph_mode)[0], **delta,
        }), flush=True)  # fmt: skip


def _median_of(rows: list[dict], key: str) -> float | None:
    """Median of ``key`` over the rows that have it (phases without a proposer have none)."""
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def summarise(rows: list[dict], names: list[str], workloads=WORKLOADS) -> dict:
    """Per workload and config: median/min/max speedup vs none (per repetition) and spec stats."""
    out: dict = {}
    for wl in workloads:
        for name in names:
            mine = [r for r in rows if r["workload"] == wl and r["config"] == name]
            base = {r["rep"]: r for r in rows if r["workload"] == wl and r["config"] == "none"}
            ratios = [r["tok_per_s"] / base[r["rep"]]["tok_per_s"] for r in mine]
            drafts = sum(r["drafts"] for r in mine)
            drafted = sum(r["drafted"] for r in mine)
            accepted = sum(r["accepted"] for r in mine)
            out[f"{wl}/{name}"] = {
                "speedup_median": statistics.median(ratios),
                "speedup_min": min(ratios),
                "speedup_max": max(ratios),
                # (max - min) / median over the repetitions, of the speedup and of the
                # engine's own rate; the bench aims for both under 0.05.
                "speedup_spread": spread(ratios),
                "tok_per_s_spread": spread([r["tok_per_s"] for r in mine]),
                # The most of any phase's time that went to stalled rounds (None when
                # a row comes from a run that kept no round times).
                "stall_share_max": most_stalled([r.get("stall_share") for r in mine]),
                "phase_seconds_min": min(r["seconds"] for r in mine),
                "accepted_per_step": 1 + accepted / drafts if drafts else None,
                "draft_acceptance": accepted / drafted if drafted else None,
                "propose_ms_median": _median_of(mine, "propose_ms"),
                # Share of proposer calls the cost rule kept the speculator from drafting,
                # and (hybrid) kept every draft back, suffix drafts too.
                "withheld_share_median": _median_of(mine, "withheld_share"),
                "undrafted_share_median": _median_of(mine, "undrafted_share"),
            }
    return out


def _complete(rows: list[dict], row: dict, names: list[str]) -> bool:
    """Whether every configuration has a row for this row's workload and repetition."""
    got = {r["config"] for r in rows if r["workload"] == row["workload"] and r["rep"] == row["rep"]}
    return got >= set(names)


def _measured(rows: list[dict], workloads: dict) -> dict:
    return {w: b for w, b in workloads.items() if any(r["workload"] == w for r in rows)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--serve", nargs=4, metavar=("MODEL", "SPEC", "UTIL", "ENGINE"),
                    help=argparse.SUPPRESS)  # fmt: skip
    ap.add_argument("--model")
    ap.add_argument("--mlp", help="arctic MLP speculator checkpoint")
    ap.add_argument("--lstm", help="arctic LSTM speculator checkpoint")
    ap.add_argument("--suffix-tokens", type=int, default=16)
    ap.add_argument("--disable-by-batch-size", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-phase", type=float, default=10.0)
    ap.add_argument("--prompt-len", type=int, default=256)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--gpu-util", type=float, default=0.14)
    ap.add_argument("--workloads", default="one,batch32", help="comma list of: one, batch32")
    ap.add_argument("--configs", default="",
                    help="comma list of the configurations to run, e.g. none,none-sync,suffix "
                    "(default: all; must name none)")  # fmt: skip
    ap.add_argument("--out", type=Path)
    ap.add_argument("--budget", type=float, default=0.0, help="seconds; 0: no limit")
    ap.add_argument("--pin-cpus", type=int, default=0, metavar="K",
                    help="give each engine K host cores of its own (0: share them all)")  # fmt: skip
    ap.add_argument("--host-profile", action="store_true",
                    help="after the timed repetitions, one more round per engine and workload "
                    "under cProfile: host ms per engine step by function")  # fmt: skip
    args = ap.parse_args(argv)
    if args.serve:
        model, spec, util, engine = args.serve
        serve(model, json.loads(spec), float(util), json.loads(engine))
        return 0
    if not args.model or not args.out:
        print("error: --model and --out are required", file=sys.stderr)
        return 2
    workloads = {w: WORKLOADS[w] for w in args.workloads.split(",") if w in WORKLOADS}
    if not workloads:
        print(f"error: --workloads names none of {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    try:
        configs = select_configs(spec_configs(args), args.configs)
    except ValueError as err:
        print(f"error: --configs: {err}", file=sys.stderr)
        return 2
    names = list(configs)
    run_args = {k: str(v) for k, v in vars(args).items() if k != "budget"}
    try:
        rows = earlier_rows(args.out, run_args, names)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    earlier: dict = json.loads(args.out.read_text()) if rows else {}
    # Host profiles (--host-profile), "workload/config" -> host_profile's result.
    profiles: dict = earlier.get("host_profiles", {})
    # The last call's engine start-up, warm-up and longest repetition, seconds (see budget_problem).
    timing: dict = earlier.get("timing", {})

    def write_report() -> dict:
        """Written after every repetition, so a call cut short keeps what it measured."""
        done = [r for r in rows if _complete(rows, r, names)]
        report = {"args": run_args, "configs": configs, "engine_args": ENGINE_ARGS,
                  "rows": rows, "summary": summarise(done, names, _measured(done, workloads)),
                  "timing": timing}  # fmt: skip
        if args.host_profile:
            report["host_profiles"] = profiles
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(report, indent=2))
        tmp.replace(args.out)
        return report

    try:
        cpus = engine_cpus(len(names), args.pin_cpus)
    except ValueError as err:
        print(f"error: --pin-cpus: {err}", file=sys.stderr)
        return 2
    todo = missing_repetitions(workloads, args.reps, rows)
    unprofiled = [f"{w}/{n}" for w in workloads for n in names] if args.host_profile else []
    unprofiled = [key for key in unprofiled if key not in profiles]
    if todo and (problem := budget_problem(args.budget, timing)):
        print(f"error: --budget: {problem}", file=sys.stderr)
        return 2
    if todo or unprofiled:
        finished = measure(
            args, configs, cpus, workloads, todo, rows, write_report, profiles, timing
        )
        if not finished:
            print(f"budget of {args.budget:.0f} s reached; run the same command again to go on")
            return RESUMABLE
    report = write_report()
    for key, s in report["summary"].items():
        print(key, json.dumps(s))
    for key, profile in profiles.items():
        print(f"host profile {key}: {profile_line(profile)}")
    return 0


def profile_line(profile: dict, top: int = 5) -> str:
    """One line of a host profile: wall ms per step under cProfile, the largest self times."""
    if "error" in profile:
        return f"not profiled ({profile['error']})"
    rows = ", ".join(
        f"{r['function']} {r['self_ms_per_step']:.2f}" for r in profile["by_self_time"][:top]
    )
    return (
        f"{profile['wall_ms_per_step_under_cprofile']:.2f} ms a step under cProfile over "
        f"{profile['steps']} steps; largest self ms per step: {rows}"
    )


def missing_repetitions(workloads: dict, reps: int, rows: list[dict]) -> list[tuple[str, int]]:
    """(workload, repetition) pairs still to measure, in run order."""
    have = {(r["workload"], r["rep"]) for r in rows}
    return [(wl, rep) for wl in workloads for rep in range(reps) if (wl, rep) not in have]


def earlier_rows(out: Path, run_args: dict, names: list[str]) -> list[dict]:
    """The complete repetitions of an earlier call of the same run (none without ``out``)."""
    if not out.exists():
        return []
    report = json.loads(out.read_text())
    if report.get("args") != run_args:
        raise ValueError(f"{out} holds a run with other arguments; remove it or pass another --out")
    rows = report["rows"]
    return [r for r in rows if _complete(rows, r, names)]


def budget_problem(budget: float, timing: dict) -> str | None:
    """Why a call with ``budget`` seconds would measure nothing, judged by the last call's
    ``timing`` (None when it fits, when there is no limit, or when nothing is known yet)."""
    if not budget or "startup_s" not in timing or "rep_s" not in timing:
        return None
    warmup = timing.get("warmup_s", 0.0)
    need = timing["startup_s"] + warmup + timing["rep_s"]
    if need <= budget:
        return None
    return (
        f"{budget:.0f} s cannot hold one repetition: the last call's engines took "
        f"{timing['startup_s']:.0f} s to start, {warmup:.0f} s to warm up and "
        f"{timing['rep_s']:.0f} s for its longest repetition; give at least {need:.0f} s"
    )


def measure(
    args, configs, cpus, workloads, todo, rows, write_report, profiles=None, timing=None
) -> bool:
    """Run the missing repetitions, interleaved; False if the budget stopped it early.
    ``cpus``: each configuration's CPU set, in order (None: not pinned). With
    ``--host-profile``, then profile one round per engine and workload into ``profiles``
    (after the timed phases, so that the profiler slows none of them). ``timing`` is
    updated with this call's start-up, warm-up and longest repetition; the last call's
    times bound the first repetition's."""
    timing = {} if timing is None else timing
    start = time.perf_counter()
    names = list(configs)
    logs = args.out.with_suffix(".logs")
    logs.mkdir(parents=True, exist_ok=True)
    engines = {
        n: EngineProcess(
            n,
            [
                __file__,
                "--serve",
                args.model,
                json.dumps(c),
                str(args.gpu_util),
                json.dumps(ENGINE_ARGS.get(n, {})),
            ],
            logs / f"{n}.log",
            cpus=pinned,
        )
        for (n, c), pinned in zip(configs.items(), cpus)
    }
    timing["startup_s"] = round(time.perf_counter() - start, 1)
    warmed: set[str] = set()
    # Kept apart: a workload's warm-up comes once per call, before its first repetition,
    # so counting it in a repetition's time would stop a call a repetition early.
    rep_seconds = float(timing.get("rep_s", 0.0))
    warmup_seconds = float(timing.get("warmup_s", 0.0))
    try:
        for wl, rep in todo:
            need = rep_seconds + (0.0 if wl in warmed else warmup_seconds)
            if args.budget and time.perf_counter() - start + need > args.budget:
                return False
            cmd = dict(batch=workloads[wl], prompt_len=args.prompt_len,
                       max_tokens=args.max_tokens, seed=0)  # fmt: skip
            if wl not in warmed:
                t_warm = time.perf_counter()
                for e in engines.values():  # warm-up, untimed
                    e.run(min_seconds=0, **cmd)
                warmed.add(wl)
                warmup_seconds = max(warmup_seconds, time.perf_counter() - t_warm)
                timing["warmup_s"] = round(warmup_seconds, 1)
            t0 = time.perf_counter()
            order = names[rep % len(names) :] + names[: rep % len(names)]
            for name in order:
                r = engines[name].run(min_seconds=args.min_phase, **dict(cmd, seed=rep + 1))
                rows.append({"workload": wl, "config": name, "rep": rep, **r})
                print(
                    f"{wl} rep {rep} {name}: {r['tok_per_s']:.0f} tok/s in {r['seconds']:.1f} s"
                    f" ({r['rounds']} rounds, {100 * r['stall_share']:.0f} % of it in stalls)",
                    flush=True,
                )
            rep_seconds = max(rep_seconds, time.perf_counter() - t0)
            timing["rep_s"] = round(rep_seconds, 1)
            write_report()
        if args.host_profile and profiles is not None:
            for wl in workloads:
                cmd = dict(batch=workloads[wl], prompt_len=args.prompt_len,
                           max_tokens=args.max_tokens, seed=args.reps + 1)  # fmt: skip
                for name in names:
                    if f"{wl}/{name}" in profiles:
                        continue
                    if wl not in warmed:  # warm-up, unprofiled, on the timed warm-up's prompts
                        engines[name].run(min_seconds=0, **dict(cmd, seed=0))
                    profiles[f"{wl}/{name}"] = engines[name].run(profile=True, **cmd)["profile"]
                warmed.add(wl)
            write_report()
    finally:
        for e in engines.values():
            e.close()
    return True


if __name__ == "__main__":
    sys.exit(main())
