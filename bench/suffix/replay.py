"""Replay benchmark: drive SuffixDecodingCache exactly as vLLM's proposer does.

Per request: start_request(prompt); then each step add_active_response(the
tokens the step produced), speculate on the last ``depth`` context tokens,
accept the longest draft prefix that equals the true continuation, and emit
those plus one more true token; finally stop_request. ``--concurrency``
requests run in lockstep like a running batch: one pass over the running
requests is one forward step, and a finished request frees its slot.

Each run reports, per draft policy, forward steps, drafted and accepted
tokens, and the time those steps would take under a per-step cost model
(costmodel.py; fitted from GPU traces with ``--cost``), next to the time of
the same requests without speculation.

Synthetic workloads (workloads.py):
    python bench/suffix/replay.py --out bench/suffix/results.json --md bench/suffix/RESULTS.md
Recorded GPU outputs (gpu_speed.py --record), phases replayed in order on one
cache per policy, like the GPU engine ran them:
    python bench/suffix/replay.py --pairs rec.json --cost cost.json --policies cost legacy off

Policy specs: NAME[:r=R][:lf=L][:f=F][:p=P], NAME in cost|legacy|off|nodraft;
r and lf: the cost policy's token cost ratio and lone_spec_factor; f and p:
max_spec_factor and min_token_prob as vLLM passes them.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from costmodel import StepCost  # noqa: E402
from workloads import WORKLOADS, copy_record  # noqa: E402

from arctic_inference.suffix_decoding import SlipRecovery, SuffixDecodingCache  # noqa: E402
from arctic_inference.suffix_decoding.policy import (  # noqa: E402
    CostAwarePolicy,
    LoadAwareBackoff,
    NeverDraft,
)

PHASES = (("a_single", 1), ("b_batch_first", 0), ("c_batch_again", 0))  # 0: all at once


def parse_policy(spec: str) -> dict:
    name, *opts = spec.split(":")
    out = {"spec": spec, "name": name, "r": None, "f": 1.0, "p": 0.1, "lf": None}
    for o in opts:
        k, v = o.split("=")
        out[k] = float(v)
    if name not in ("cost", "legacy", "off", "nodraft"):
        raise SystemExit(f"unknown policy {name!r}")
    return out


def make_cache(pol: dict, depth: int, max_cached: int) -> SuffixDecodingCache:
    if pol["name"] == "cost":
        kw = {"token_cost": pol["r"], "lone_spec_factor": pol["lf"]}
        policy = CostAwarePolicy(**{k: v for k, v in kw.items() if v is not None})
    else:
        policy = {"legacy": LoadAwareBackoff, "nodraft": NeverDraft, "off": lambda: None}[
            pol["name"]
        ]()
    return SuffixDecodingCache(
        max_tree_depth=depth,
        max_cached_requests=max_cached,
        policy=policy,
        recovery=recovery_of(pol),
    )


def recovery_of(pol: dict):
    """Slip recovery from policy options: rec=1 enables it; rw weight, rt max_tail,
    ra anchor_len, rm min_anchor, rs skips (1, 2 or 12 = both). Off otherwise."""
    if not pol.get("rec"):
        return False
    kw = {}
    for opt, key in (
        ("rw", "weight"),
        ("rt", "max_tail"),
        ("ra", "anchor_len"),
        ("rm", "min_anchor"),
    ):
        if opt in pol:
            kw[key] = pol[opt] if key == "weight" else int(pol[opt])
    if "rs" in pol:
        kw["skips"] = tuple(int(ch) for ch in str(int(pol["rs"])))
    return SlipRecovery(**kw)


def replay(
    cache,
    pairs,
    depth: int,
    num_spec: int,
    concurrency: int,
    pol: dict,
    cost: StepCost,
    prefix: str = "r",
) -> dict:
    """Run ``pairs`` through ``cache`` in lockstep; returns counters and latencies."""
    spec_ns: list[int] = []
    start_ns = add_ns = 0
    prompt_toks = add_toks = 0
    drafted = accepted = calls = steps = 0
    est_ms = base_ms = 0.0
    mem_trace: list[int] = []
    pending = list(enumerate(pairs))
    running: dict[str, dict] = {}
    done = 0
    checkpoint = max(1, len(pairs) // 10)
    conc = concurrency or len(pairs)
    while pending or running:
        step_tokens = step_drafts = 0
        while pending and len(running) < conc:
            i, (prompt, resp) = pending.pop(0)
            rid = f"{prefix}{i}"
            arr = np.array(
                list(prompt) + list(resp), dtype=np.int64
            )  # like InputBatch.token_ids_cpu
            t0 = time.perf_counter_ns()
            cache.start_request(rid, arr[: len(prompt)])
            start_ns += time.perf_counter_ns() - t0
            prompt_toks += len(prompt)
            step_tokens += len(prompt) - 1  # the prefill rides in this step
            running[rid] = {
                "arr": arr,
                "n": len(prompt),
                "end": len(prompt) + len(resp),
                "new": [int(resp[0])],
                "draft": 0,
            }
        batch = len(running)
        for rid in list(running):
            st = running[rid]
            step_tokens += 1 + st["draft"]
            step_drafts += st["draft"]
            new = st["new"]
            t0 = time.perf_counter_ns()
            cache.add_active_response(rid, new)
            add_ns += time.perf_counter_ns() - t0
            add_toks += len(new)
            st["n"] += len(new)
            n = st["n"]
            if n >= st["end"]:
                cache.stop_request(rid)
                del running[rid]
                done += 1
                if done % checkpoint == 0:
                    mem_trace.append(cache.stats()["total_bytes"])
                continue
            pattern = st["arr"][max(0, n - depth) : n]
            t0 = time.perf_counter_ns()
            draft = cache.speculate(
                rid,
                pattern,
                max_spec_tokens=min(num_spec, st["end"] - n - 1),
                max_spec_factor=pol["f"],
                min_token_prob=pol["p"],
            )
            spec_ns.append(time.perf_counter_ns() - t0)
            truth = st["arr"][n : n + len(draft.token_ids)].tolist()
            a = 0
            while a < len(truth) and draft.token_ids[a] == truth[a]:
                a += 1
            drafted += len(draft.token_ids)
            accepted += a
            calls += 1
            st["draft"] = len(draft.token_ids)
            st["new"] = st["arr"][n : min(n + a + 1, st["end"])].tolist()
        steps += 1
        est_ms += cost.step_ms(True, batch, step_tokens, step_drafts)
    base_steps, base_ms = no_spec_schedule(
        [len(r) for _, r in pairs], [len(p) for p, _ in pairs], conc, cost
    )
    lat = np.array(spec_ns or [0]) / 1000.0
    return {
        "requests": len(pairs),
        "steps": steps,
        "drafted": drafted,
        "accepted": accepted,
        "speculate_calls": calls,
        "est_ms": est_ms,
        "base_steps": base_steps,
        "base_est_ms": base_ms,
        "est_speedup": base_ms / est_ms if est_ms else 0.0,
        "propose_us_per_req_step": (add_ns + float(np.sum(spec_ns or [0])))
        / 1000.0
        / max(1, calls),
        "speculate_us": {
            "mean": float(lat.mean()),
            "p50": float(np.percentile(lat, 50)),
            "p99": float(np.percentile(lat, 99)),
            "calls": int(lat.size),
        },
        "prompt_build_tok_per_s": prompt_toks / max(1e-9, start_ns / 1e9),
        "append_tok_per_s": add_toks / max(1e-9, add_ns / 1e9),
        "mean_accepted_per_step": accepted / max(1, calls),
        "draft_acceptance_rate": accepted / max(1, drafted),
        "peak_cache_bytes": max(mem_trace) if mem_trace else 0,
        "cache_bytes_trace": mem_trace,
    }


def no_spec_schedule(resp_lens: list[int], prompt_lens: list[int], conc: int, cost: StepCost):
    """Steps and estimated ms of the same lockstep schedule without speculation."""
    left = list(resp_lens)
    nxt = 0
    running: list[int] = []
    steps = 0
    ms = 0.0
    while nxt < len(left) or running:
        tokens = 0
        while nxt < len(left) and len(running) < conc:
            running.append(nxt)
            tokens += prompt_lens[nxt] - 1
            nxt += 1
        batch = len(running)
        tokens += batch
        for i in running:
            left[i] -= 1
        running = [i for i in running if left[i] > 0]
        steps += 1
        ms += cost.step_ms(False, batch, tokens, 0)
    return steps, ms


def replay_record(
    record: dict,
    policies: list[dict],
    depth: int,
    num_spec: int,
    max_cached: int,
    cost: StepCost,
    truth: str = "none",
) -> list[dict]:
    """Replay a gpu_speed.py record: its phases in order on one cache per policy."""
    rows = []
    for pol in policies:
        cache = make_cache(pol, depth, max_cached)
        for name, conc in PHASES:
            ph = record["phases"].get(name)
            if ph is None or truth not in ph["outputs"]:
                continue
            pairs = list(zip(ph["prompts"], ph["outputs"][truth]))
            r = replay(cache, pairs, depth, num_spec, conc, pol, cost, prefix=f"{name}-")
            r.update(policy=pol["spec"], phase=name)
            rows.append(r)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--depth", type=int, default=64)
    ap.add_argument("--num-spec", type=int, default=32)
    ap.add_argument("--max-cached", type=int, default=100)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS))
    ap.add_argument("--policies", nargs="+", default=["cost", "legacy", "off"])
    ap.add_argument(
        "--pairs",
        help="gpu_speed.py --record file to replay instead of workloads "
        "('synthetic': the same layout from workloads.copy_record, a noisy copier)",
    )
    ap.add_argument("--truth", default="none", help="which variant's outputs are the ground truth")
    ap.add_argument(
        "--cost", type=Path, help="StepCost JSON (costmodel.py --out); default: built-in guess"
    )
    ap.add_argument("--out", type=Path)
    ap.add_argument("--md", type=Path)
    args = ap.parse_args()
    cost = StepCost.load(args.cost) if args.cost else StepCost()
    policies = [parse_policy(p) for p in args.policies]
    if args.pairs:
        record = (
            copy_record() if args.pairs == "synthetic" else json.loads(Path(args.pairs).read_text())
        )
        rows = replay_record(
            record, policies, args.depth, args.num_spec, args.max_cached, cost, args.truth
        )
        md = render_pairs_md(args, cost, rows)
        print(md)
        if args.out:
            args.out.write_text(json.dumps({"cost": cost.__dict__, "results": rows}, indent=1))
        if args.md:
            args.md.write_text(md)
        return
    results = []
    for name in args.workloads:
        pairs = list(WORKLOADS[name](args.requests, seed=0))
        for conc in args.concurrency:
            for pol in policies:
                cache = make_cache(pol, args.depth, args.max_cached)
                r = replay(cache, pairs, args.depth, args.num_spec, conc, pol, cost)
                r.update(
                    workload=name,
                    concurrency=conc,
                    policy=pol["spec"],
                    depth=args.depth,
                    num_spec=args.num_spec,
                )
                results.append(r)
                s = r["speculate_us"]
                print(
                    f"{name:8s} conc={conc:3d} {pol['spec']:10s} steps={r['steps']} drafted={r['drafted']} "
                    f"accepted={r['accepted']} est x{r['est_speedup']:.2f} spec p50={s['p50']:.1f}us "
                    f"mean={s['mean']:.1f}us peak={r['peak_cache_bytes'] / 2**20:.1f} MiB",
                    flush=True,
                )
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    meta = {
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "peak_rss_mib": peak_rss,
        "cost": cost.__dict__,
    }
    if args.out:
        args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    if args.md:
        args.md.write_text(render_md(meta, results))


def render_pairs_md(args, cost: StepCost, rows: list[dict]) -> str:
    lines = [
        f"Replay of `{args.pairs}` (truth: outputs of `{args.truth}`), cost model {cost.__dict__}",
        "",
        "| policy | phase | steps | steps no spec | drafted | accepted | acceptance | est ms | est ms no spec | est speedup |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['policy']} | {r['phase']} | {r['steps']} | {r['base_steps']} | {r['drafted']} "
            f"| {r['accepted']} | {r['draft_acceptance_rate']:.2f} | {r['est_ms']:.0f} "
            f"| {r['base_est_ms']:.0f} | x{r['est_speedup']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def render_md(meta: dict, results: list[dict]) -> str:
    lines = [
        "# Suffix cache replay benchmark (CPU)",
        "",
        "Produced by `python bench/suffix/replay.py --out bench/suffix/results.json --md bench/suffix/RESULTS.md`",
        f"on a 2-core machine, Python {meta['python']}; args: `{json.dumps(meta['args'])}`.",
        "The cache is driven exactly as vLLM's proposer drives it (see replay.py); `conc` requests",
        "run in lockstep like a batch (one pass = one forward step). Latencies include the Python",
        "wrapper and policy. `est speedup` applies the per-step cost model",
        f"`{json.dumps(meta['cost'])}` (costmodel.py; a first guess until fitted from GPU traces)",
        "to the replayed steps and to the same requests without speculation.",
        "",
        "| workload | conc | policy | steps | drafted | accepted | acceptance | est speedup | speculate mean µs "
        "| p50 µs | p99 µs | append tok/s | prompt build tok/s | peak cache MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        s = r["speculate_us"]
        lines.append(
            f"| {r['workload']} | {r['concurrency']} | {r['policy']} | {r['steps']} | {r['drafted']} "
            f"| {r['accepted']} | {r['draft_acceptance_rate']:.2f} | x{r['est_speedup']:.2f} "
            f"| {s['mean']:.1f} | {s['p50']:.1f} | {s['p99']:.1f} "
            f"| {r['append_tok_per_s']:,.0f} | {r['prompt_build_tok_per_s']:,.0f} "
            f"| {r['peak_cache_bytes'] / 2**20:.1f} |"
        )
    lines += ["", f"Peak process RSS: {meta['peak_rss_mib']:.0f} MiB.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
