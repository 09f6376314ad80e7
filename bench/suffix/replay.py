"""Replay benchmark: drive SuffixDecodingCache exactly as vLLM's proposer does.

Per request: start_request(prompt); then each step add_active_response(the
tokens the step produced), speculate on the last ``depth`` context tokens,
accept the longest draft prefix that equals the true continuation, and emit
those plus one more true token; finally stop_request. ``--concurrency``
requests are interleaved round-robin like a running batch.

    python bench/suffix/replay.py --out bench/suffix/results.json --md bench/suffix/RESULTS.md
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
from workloads import WORKLOADS  # noqa: E402

from arctic_inference.suffix_decoding import SuffixDecodingCache  # noqa: E402


def replay(pairs, depth: int, num_spec: int, concurrency: int, max_cached: int, min_prob: float):
    cache = SuffixDecodingCache(max_tree_depth=depth, max_cached_requests=max_cached)
    spec_ns: list[int] = []
    start_ns = add_ns = 0
    prompt_toks = add_toks = 0
    drafted = accepted = steps = 0
    mem_trace: list[int] = []
    pending = list(enumerate(pairs))
    running: dict[str, dict] = {}
    done = 0
    checkpoint = max(1, len(pairs) // 10)
    while pending or running:
        while pending and len(running) < concurrency:
            i, (prompt, resp) = pending.pop(0)
            rid = f"r{i}"
            arr = np.array(prompt + resp, dtype=np.int64)  # like InputBatch.token_ids_cpu
            t0 = time.perf_counter_ns()
            cache.start_request(rid, arr[: len(prompt)])
            start_ns += time.perf_counter_ns() - t0
            prompt_toks += len(prompt)
            running[rid] = {"arr": arr, "n": len(prompt), "end": len(prompt) + len(resp), "new": [resp[0]]}
        for rid in list(running):
            st = running[rid]
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
            draft = cache.speculate(rid, pattern, max_spec_tokens=min(num_spec, st["end"] - n - 1),
                                    max_spec_factor=1.0, min_token_prob=min_prob)
            spec_ns.append(time.perf_counter_ns() - t0)
            truth = st["arr"][n : n + len(draft.token_ids)].tolist()
            a = 0
            while a < len(truth) and draft.token_ids[a] == truth[a]:
                a += 1
            drafted += len(draft.token_ids)
            accepted += a
            steps += 1
            st["new"] = st["arr"][n : min(n + a + 1, st["end"])].tolist()
    lat = np.array(spec_ns) / 1000.0
    return {
        "requests": len(pairs),
        "speculate_us": {"mean": float(lat.mean()), "p50": float(np.percentile(lat, 50)),
                         "p99": float(np.percentile(lat, 99)), "calls": int(lat.size)},
        "prompt_build_tok_per_s": prompt_toks / (start_ns / 1e9),
        "append_tok_per_s": add_toks / (add_ns / 1e9),
        "mean_accepted_per_step": accepted / steps,
        "tokens_per_step": (accepted + steps) / steps,
        "draft_acceptance_rate": accepted / max(1, drafted),
        "peak_cache_bytes": max(mem_trace) if mem_trace else 0,
        "cache_bytes_trace": mem_trace,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--depth", type=int, default=64)
    ap.add_argument("--num-spec", type=int, default=32)
    ap.add_argument("--max-cached", type=int, default=100)
    ap.add_argument("--min-prob", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--md", type=Path)
    args = ap.parse_args()
    results = []
    for name in args.workloads:
        pairs = list(WORKLOADS[name](args.requests, seed=0))
        for conc in args.concurrency:
            r = replay(pairs, args.depth, args.num_spec, conc, args.max_cached, args.min_prob)
            r.update(workload=name, concurrency=conc, depth=args.depth, num_spec=args.num_spec)
            results.append(r)
            s = r["speculate_us"]
            print(f"{name:8s} conc={conc:3d} spec p50={s['p50']:.1f}us p99={s['p99']:.1f}us "
                  f"mean={s['mean']:.1f}us acc/step={r['mean_accepted_per_step']:.2f} "
                  f"append={r['append_tok_per_s']:.0f} tok/s peak={r['peak_cache_bytes'] / 2**20:.1f} MiB",
                  flush=True)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    meta = {"machine": platform.processor() or platform.machine(), "python": platform.python_version(),
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "peak_rss_mib": peak_rss}
    if args.out:
        args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    if args.md:
        args.md.write_text(render_md(meta, results))


def render_md(meta: dict, results: list[dict]) -> str:
    lines = [
        "# Suffix cache replay benchmark (CPU)",
        "",
        "Produced by `python bench/suffix/replay.py --out bench/suffix/results.json --md bench/suffix/RESULTS.md`",
        f"on a 2-core machine, Python {meta['python']}; args: `{json.dumps(meta['args'])}`.",
        "The cache is driven exactly as vLLM's proposer drives it (see replay.py); `conc` requests",
        "run interleaved like a batch. Latencies include the Python wrapper and policy.",
        "",
        "| workload | conc | speculate mean µs | p50 µs | p99 µs | append tok/s | prompt build tok/s "
        "| accepted/step | draft acceptance | peak cache MiB | cache MiB at each 10% of requests |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        s = r["speculate_us"]
        trace = " ".join(f"{b / 2**20:.1f}" for b in r["cache_bytes_trace"])
        lines.append(
            f"| {r['workload']} | {r['concurrency']} | {s['mean']:.1f} | {s['p50']:.1f} | {s['p99']:.1f} "
            f"| {r['append_tok_per_s']:,.0f} | {r['prompt_build_tok_per_s']:,.0f} "
            f"| {r['mean_accepted_per_step']:.2f} | {r['draft_acceptance_rate']:.2f} "
            f"| {r['peak_cache_bytes'] / 2**20:.1f} | {trace} |"
        )
    lines += ["", f"Peak process RSS: {meta['peak_rss_mib']:.0f} MiB.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
