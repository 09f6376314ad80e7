"""GPU speed of vLLM's method="suffix" backed by our cache (copy-llama, bf16).

Phases, each timed per engine (so phase (c) sees what (b) cached):
  (a) single: 8 prompts (not reused later), one request at a time
  (b) batch:  32 prompts as one batch, first sight
  (c) again:  the same 32 prompts again
Each variant is one engine in its own subprocess (clean GPU state); variants
run in the order given, and the results are rewritten after every engine so a
run cut short still leaves everything measured so far.

Variants (``--variants``, comma separated): ``none`` (no speculation) or
``suffix`` followed by ``-``-joined modifiers:
  cost | legacy | off (= nobackoff) | nodraft   draft policy (ARCTIC_INFERENCE_SUFFIX_POLICY;
          plain ``suffix`` sets none: the library default, ``off`` since 2026-11-30)
  r<R>    cost policy token cost ratio    lf<L>  cost policy lone_spec_factor
  f<F>    suffix_decoding_max_spec_factor p<P>   suffix_decoding_min_token_prob
  d<D>    suffix_decoding_max_tree_depth  n<N>   num_speculative_tokens
  rec     slip-recovery drafts on (ARCTIC_INFERENCE_SUFFIX_RECOVER=1; off by default)
e.g. ``none,suffix,suffix-legacy,suffix-nodraft,suffix-f4``.

Besides the summary (--out/--md) a record file (--record) keeps, per phase,
the prompt ids and every variant's generated ids (spec decoding is lossless,
so the ``none`` outputs are ground truth for replay.py --pairs) and, per
engine step, (start s, requests, scheduled tokens, draft tokens) plus the
proposer's time per call (for costmodel.py).

    VLLM_USE_V2_MODEL_RUNNER=0 python bench/suffix/gpu_speed.py \
        --model /opt/models/copy-llama --out /tmp/suffix_gpu.json --md /tmp/suffix_gpu.md
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import context_copy_prompts, copy_prompts  # noqa: E402

SPEC_KEYS = (
    "vllm:spec_decode_num_drafts",
    "vllm:spec_decode_num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens",
)
PHASES = ("a_single", "b_batch_first", "c_batch_again")


def make_prompts(args, n: int, seed: int, doc_len: int, vocab: int) -> list[list[int]]:
    """The phase prompts: ``requote`` (document, filler, start of the document again) or
    ``context`` (copy-llama's training format, prompt + output within --context-len)."""
    if args.prompt_style == "context":
        return context_copy_prompts(n, seed, max(16, args.context_len - args.new_tokens), vocab)
    return copy_prompts(n, seed, doc_len, vocab)


def parse_variant(name: str) -> tuple[dict, dict]:
    """(env overrides, speculative_config overrides) of a variant; none -> ({}, None)."""
    if name == "none":
        return {}, None
    head, *mods = name.split("-")
    if head != "suffix":
        raise SystemExit(f"variant must be none or suffix[-mod...]: {name!r}")
    env, spec = {}, {}  # plain "suffix": the library's default policy
    for m in mods:
        if m in ("legacy", "nodraft", "off", "nobackoff", "cost"):
            env["ARCTIC_INFERENCE_SUFFIX_POLICY"] = "off" if m == "nobackoff" else m
            continue
        if m == "rec":
            env["ARCTIC_INFERENCE_SUFFIX_RECOVER"] = "1"
            continue
        g = re.fullmatch(r"(lf|r|f|p|d|n)([0-9.]+)", m)
        if not g:
            raise SystemExit(f"unknown modifier {m!r} in {name!r}")
        k, v = g.groups()
        if k == "r":
            env["ARCTIC_INFERENCE_SUFFIX_TOKEN_COST"] = v
            env.setdefault("ARCTIC_INFERENCE_SUFFIX_POLICY", "cost")
        elif k == "lf":
            env["ARCTIC_INFERENCE_SUFFIX_LONE_FACTOR"] = v
            env.setdefault("ARCTIC_INFERENCE_SUFFIX_POLICY", "cost")
        else:
            key = {
                "f": "suffix_decoding_max_spec_factor",
                "p": "suffix_decoding_min_token_prob",
                "d": "suffix_decoding_max_tree_depth",
                "n": "num_speculative_tokens",
            }[k]
            spec[key] = int(v) if k in "dn" else float(v)
    return env, spec


def spec_counters(llm) -> dict[str, float]:
    out = {k: 0.0 for k in SPEC_KEYS}
    out["iterations"] = 0.0
    try:
        for m in llm.get_metrics():
            if m.name in SPEC_KEYS:
                out[m.name] += float(getattr(m, "value", 0.0))
            elif m.name == "vllm:iteration_tokens_total":  # histogram: one observation per step
                out["iterations"] += float(getattr(m, "count", 0))
    except Exception:  # metrics are informative only
        pass
    return out


def worker(args) -> None:
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    variant_spec = json.loads(args.spec_json) if args.spec_json else None
    steps: list[tuple] = []  # (t, requests, scheduled tokens, draft tokens)
    proposes: list[tuple] = []  # (t, seconds)
    if variant_spec is not None:
        import vllm.v1.spec_decode.suffix_decoding as sd

        orig_propose = sd.SuffixDecodingProposer.propose

        def timed_propose(self, *a, **k):
            t = time.perf_counter()
            r = orig_propose(self, *a, **k)
            proposes.append((t, time.perf_counter() - t))
            return r

        sd.SuffixDecodingProposer.propose = timed_propose

    cfg = json.loads((Path(args.model) / "config.json").read_text())
    max_pos = int(cfg.get("max_position_embeddings", 2048))
    vocab = int(cfg.get("vocab_size", 348))
    max_len = min(2048, max_pos)
    doc_len = max(24, min(192, (max_len - args.new_tokens - 16) * 4 // 7))
    kw = dict(
        model=args.model,
        dtype="bfloat16",
        enforce_eager=not args.cudagraphs,
        seed=0,
        gpu_memory_utilization=0.35,
        max_model_len=max_len,
        disable_log_stats=False,
        enable_prefix_caching=False,
    )
    if variant_spec is not None:
        kw["speculative_config"] = {
            "method": "suffix",
            "num_speculative_tokens": args.num_spec,
            "suffix_decoding_max_tree_depth": args.depth,
            **variant_spec,
        }
    t0 = time.perf_counter()
    llm = LLM(**kw)
    startup = time.perf_counter() - t0
    hooked = True
    try:
        sched = llm.llm_engine.engine_core.engine_core.scheduler
        orig_schedule = sched.schedule

        def traced_schedule(*a, **k):
            out = orig_schedule(*a, **k)
            if out.total_num_scheduled_tokens > 0:
                steps.append(
                    (
                        time.perf_counter(),
                        len(out.num_scheduled_tokens),
                        out.total_num_scheduled_tokens,
                        sum(len(v) for v in out.scheduled_spec_decode_tokens.values()),
                    )
                )
            return out

        sched.schedule = traced_schedule
    except Exception as e:  # the step trace is optional
        hooked = False
        print(f"[gpu_speed] no step trace: {e!r}", flush=True)
    sp = SamplingParams(temperature=0.0, max_tokens=args.new_tokens, ignore_eos=True)
    single = make_prompts(args, args.single, 1, doc_len, vocab)
    batch = make_prompts(args, args.batch, 2, doc_len, vocab)
    warm = make_prompts(args, 2, 3, doc_len, vocab)
    llm.generate(
        [TokensPrompt(prompt_token_ids=p) for p in warm],
        SamplingParams(temperature=0.0, max_tokens=16),
        use_tqdm=False,
    )

    def timed(prompts_list):
        before = spec_counters(llm)
        s0, p0 = len(steps), len(proposes)
        t = time.perf_counter()
        outs = []
        for group in prompts_list:
            outs += llm.generate(
                [TokensPrompt(prompt_token_ids=p) for p in group], sp, use_tqdm=False
            )
        end = time.perf_counter()
        dt = end - t
        after = spec_counters(llm)
        toks = sum(len(o.outputs[0].token_ids) for o in outs)
        st = [(round(x[0] - t, 6), *x[1:]) for x in steps[s0:]]
        pr = [(round(x[0] - t, 6), round(x[1], 7)) for x in proposes[p0:]]
        return {
            "seconds": dt,
            "tokens": toks,
            "tok_per_s": toks / dt,
            "spec": {k.split(":")[-1]: after[k] - before[k] for k in SPEC_KEYS},
            "iterations_metric": after["iterations"] - before["iterations"],
            "steps": len(st) if hooked else None,
            "scheduled_tokens": sum(x[2] for x in st),
            "scheduled_draft_tokens": sum(x[3] for x in st),
            "propose_s": sum(x[1] for x in pr),
            "propose_calls": len(pr),
            "outputs": [list(o.outputs[0].token_ids) for o in outs],
            "trace": {"steps": st, "end_s": round(dt, 6), "propose": pr},
        }

    res = {
        "startup_s": startup,
        "max_model_len": max_len,
        "doc_len": doc_len,
        "prompts": {"a_single": single, "b_batch_first": batch, "c_batch_again": batch},
        "a_single": timed([[p] for p in single]),
        "b_batch_first": timed([batch]),
        "c_batch_again": timed([batch]),
    }
    Path(args.worker_out).write_text(json.dumps(res))


def run_variant(args, variant: str, timeout: float) -> dict:
    env_over, spec = parse_variant(variant)
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "r.json"
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            "--worker-out",
            str(out),
            "--model",
            args.model,
            "--num-spec",
            str(args.num_spec),
            "--depth",
            str(args.depth),
            "--new-tokens",
            str(args.new_tokens),
            "--single",
            str(args.single),
            "--batch",
            str(args.batch),
            "--prompt-style",
            args.prompt_style,
            "--context-len",
            str(args.context_len),
        ]
        if spec is not None:
            cmd += ["--spec-json", json.dumps(spec)]
        if args.cudagraphs:
            cmd.append("--cudagraphs")
        env = dict(
            os.environ, VLLM_USE_V2_MODEL_RUNNER="0", VLLM_ENABLE_V1_MULTIPROCESSING="0", **env_over
        )
        subprocess.run(cmd, check=True, env=env, timeout=timeout)
        r = json.loads(out.read_text())
        r["mode"] = variant
        r["env"] = env_over
        r["speculative_config"] = spec
        return r


def write_reports(args, runs: dict, timings: dict, wall0: float) -> str:
    record = {"args": {k: str(v) for k, v in vars(args).items()}, "phases": {}, "traces": {}}
    base = runs.get("none")
    table = []
    for m, r in runs.items():
        record["traces"][m] = {ph: r[ph]["trace"] for ph in PHASES}
        for ph in PHASES:
            slot = record["phases"].setdefault(ph, {"prompts": r["prompts"][ph], "outputs": {}})
            slot["outputs"][m] = r[ph]["outputs"]
        if base is None or m == "none":
            continue
        for ph in PHASES:
            x, b = r[ph], base[ph]
            same = sum(p == q for p, q in zip(x["outputs"], b["outputs"]))
            s = x["spec"]
            table.append(
                {
                    "mode": m,
                    "phase": ph,
                    "speedup": b["seconds"] / x["seconds"],
                    "base_tok_s": b["tok_per_s"],
                    "spec_tok_s": x["tok_per_s"],
                    "base_steps": b["steps"],
                    "steps": x["steps"],
                    "ms_per_step": 1e3 * x["seconds"] / max(1, x["steps"] or 1),
                    "base_ms_per_step": 1e3 * b["seconds"] / max(1, b["steps"] or 1),
                    "propose_ms_per_step": 1e3 * x["propose_s"] / max(1, x["propose_calls"]),
                    "drafts": s["spec_decode_num_drafts"],
                    "draft_tokens": s["spec_decode_num_draft_tokens"],
                    "accepted": s["spec_decode_num_accepted_tokens"],
                    "accepted_per_draft": s["spec_decode_num_accepted_tokens"]
                    / max(1, s["spec_decode_num_drafts"]),
                    "draft_acceptance": s["spec_decode_num_accepted_tokens"]
                    / max(1, s["spec_decode_num_draft_tokens"]),
                    "outputs_identical": f"{same}/{len(b['outputs'])}",
                }
            )
    slim = {
        m: {
            k: (
                {kk: vv for kk, vv in v.items() if kk not in ("outputs", "trace")}
                if k in PHASES
                else v
            )
            for k, v in r.items()
            if k != "prompts"
        }
        for m, r in runs.items()
    }
    report = {
        "args": record["args"],
        "summary": table,
        "runs": slim,
        "engine_timings": timings,
        "total_wall_s": time.perf_counter() - wall0,
        "record": str(args.record),
    }
    args.out.write_text(json.dumps(report, indent=1))
    args.record.write_text(json.dumps(record))
    lines = [
        "# Suffix decoding on GPU (copy-llama, bf16)",
        "",
        f"`{' '.join(sys.argv)}`; eager={not args.cudagraphs}, num_speculative_tokens={args.num_spec}, "
        f"max_tree_depth={args.depth}, {args.new_tokens} new tokens per request.",
        "",
        "| variant | phase | speedup vs no spec | tok/s no spec | tok/s spec | steps no spec | steps spec "
        "| ms/step no spec | ms/step spec | propose ms/step | drafts | draft tokens | accepted "
        "| draft acceptance | outputs identical (bf16) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in table:
        lines.append(
            f"| {t['mode']} | {t['phase']} | x{t['speedup']:.2f} | {t['base_tok_s']:.0f} | {t['spec_tok_s']:.0f} "
            f"| {t['base_steps']} | {t['steps']} | {t['base_ms_per_step']:.2f} | {t['ms_per_step']:.2f} "
            f"| {t['propose_ms_per_step']:.2f} | {t['drafts']:.0f} | {t['draft_tokens']:.0f} "
            f"| {t['accepted']:.0f} | {t['draft_acceptance']:.2f} | {t['outputs_identical']} |"
        )
    lines += [
        "",
        "Engines: "
        + "; ".join(f"{m} {v['wall_s']:.0f}s ({v['status']})" for m, v in timings.items()),
    ]
    md = "\n".join(lines) + "\n"
    if args.md:
        args.md.write_text(md)
    return md


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="/opt/models/copy-llama")
    ap.add_argument("--num-spec", type=int, default=32)
    ap.add_argument("--depth", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--single", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--cudagraphs", action="store_true", help="default: eager (fast startup)")
    ap.add_argument(
        "--prompt-style",
        choices=("requote", "context"),
        default="requote",
        help="requote: document + filler + its start again (prompt+output > 384);"
        " context: copy-llama's training format within --context-len",
    )
    ap.add_argument(
        "--context-len",
        type=int,
        default=384,
        help="with --prompt-style context: prompt length = this - --new-tokens",
    )
    ap.add_argument("--also-no-backoff", action="store_true", help="extra variant suffix-nobackoff")
    ap.add_argument("--variants", default="none,suffix", help="comma separated; see the module doc")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=290.0,
        help="start no engine that would likely end past this many seconds",
    )
    ap.add_argument("--out", type=Path, default=Path("suffix_gpu.json"))
    ap.add_argument("--md", type=Path)
    ap.add_argument(
        "--record", type=Path, help="prompts, outputs and step traces (default: OUT.record.json)"
    )
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--spec-json")
    ap.add_argument("--worker-out")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    if args.record is None:
        args.record = args.out.with_suffix(".record.json")
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if args.also_no_backoff and "suffix-nobackoff" not in variants:
        variants.append("suffix-nobackoff")
    for v in variants:
        parse_variant(v)  # fail fast on typos
    variants = ["none"] + [v for v in dict.fromkeys(variants) if v != "none"]  # the baseline first
    wall0 = time.perf_counter()
    runs: dict = {}
    timings: dict = {}
    longest = 0.0
    for v in variants:
        elapsed = time.perf_counter() - wall0
        if runs and elapsed + 1.15 * longest > args.budget_s:
            timings[v] = {"wall_s": 0.0, "status": "skipped: budget"}
            print(
                f"[gpu_speed] skip {v}: {elapsed:.0f}s elapsed, engines take up to {longest:.0f}s, "
                f"budget {args.budget_s:.0f}s",
                flush=True,
            )
            continue
        t = time.perf_counter()
        try:
            runs[v] = run_variant(args, v, timeout=max(60.0, args.budget_s - elapsed + 60))
            status = "ok"
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            status = f"failed: {type(e).__name__}"
        dt = time.perf_counter() - t
        longest = max(longest, dt)
        timings[v] = {
            "wall_s": dt,
            "status": status,
            "startup_s": runs[v]["startup_s"] if v in runs else None,
        }
        print(
            f"[gpu_speed] engine {v}: {dt:.1f}s ({status}), total {time.perf_counter() - wall0:.1f}s",
            flush=True,
        )
        md = write_reports(args, runs, timings, wall0)
    print(md, flush=True)


if __name__ == "__main__":
    main()
