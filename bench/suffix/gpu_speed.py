"""GPU speed of vLLM's method="suffix" backed by our cache (copy-llama, bf16).

Phases, each timed with and without speculation, in one engine per mode (so
phase (c) sees what (b) cached):
  (a) single: 8 prompts (not reused later), one request at a time
  (b) batch:  32 prompts as one batch, first sight
  (c) again:  the same 32 prompts again
Each engine runs in its own subprocess for a clean GPU state.

    VLLM_USE_V2_MODEL_RUNNER=0 python bench/suffix/gpu_speed.py \
        --model /opt/models/copy-llama --out /tmp/suffix_gpu.json --md /tmp/suffix_gpu.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC_KEYS = ("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
             "vllm:spec_decode_num_accepted_tokens")


def make_prompts(n: int, seed: int, doc_len: int, vocab: int) -> list[list[int]]:
    """Prompts that re-quote an earlier span, so the continuation copies it."""
    import random

    rng = random.Random(seed)
    prompts = []
    for _ in range(n):
        doc = [rng.randrange(4, vocab) for _ in range(doc_len)]
        filler = [rng.randrange(4, vocab) for _ in range(doc_len // 4)]
        prompts.append(doc + filler + doc[: doc_len // 6])
    return prompts


def spec_counters(llm) -> dict[str, float]:
    out = {k: 0.0 for k in SPEC_KEYS}
    try:
        for m in llm.get_metrics():
            if m.name in out:
                out[m.name] += float(getattr(m, "value", 0.0))
    except Exception:  # metrics are informative only
        pass
    return out


def worker(args) -> None:
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    cfg = json.loads((Path(args.model) / "config.json").read_text())
    max_pos = int(cfg.get("max_position_embeddings", 2048))
    vocab = int(cfg.get("vocab_size", 348))
    max_len = min(2048, max_pos)
    doc_len = max(24, min(192, (max_len - args.new_tokens - 16) * 4 // 7))
    kw = dict(model=args.model, dtype="bfloat16", enforce_eager=not args.cudagraphs, seed=0,
              gpu_memory_utilization=0.35, max_model_len=max_len, disable_log_stats=False,
              enable_prefix_caching=False)
    if args.mode == "suffix":
        kw["speculative_config"] = {"method": "suffix", "num_speculative_tokens": args.num_spec,
                                    "suffix_decoding_max_tree_depth": args.depth}
    t0 = time.perf_counter()
    llm = LLM(**kw)
    startup = time.perf_counter() - t0
    sp = SamplingParams(temperature=0.0, max_tokens=args.new_tokens, ignore_eos=True)
    single = make_prompts(args.single, 1, doc_len, vocab)
    batch = make_prompts(args.batch, 2, doc_len, vocab)
    warm = make_prompts(2, 3, doc_len, vocab)
    llm.generate([TokensPrompt(prompt_token_ids=p) for p in warm],
                 SamplingParams(temperature=0.0, max_tokens=16), use_tqdm=False)

    def timed(prompts_list):
        before = spec_counters(llm)
        t = time.perf_counter()
        outs = []
        for group in prompts_list:
            outs += llm.generate([TokensPrompt(prompt_token_ids=p) for p in group], sp, use_tqdm=False)
        dt = time.perf_counter() - t
        after = spec_counters(llm)
        toks = sum(len(o.outputs[0].token_ids) for o in outs)
        return {"seconds": dt, "tokens": toks, "tok_per_s": toks / dt,
                "spec": {k.split(":")[1]: after[k] - before[k] for k in SPEC_KEYS},
                "outputs": [list(o.outputs[0].token_ids) for o in outs]}

    res = {"mode": args.mode, "startup_s": startup, "max_model_len": max_len, "doc_len": doc_len,
           "a_single": timed([[p] for p in single]),
           "b_batch_first": timed([batch]),
           "c_batch_again": timed([batch])}
    Path(args.worker_out).write_text(json.dumps(res))


def run_mode(args, mode: str) -> dict:
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "r.json"
        cmd = [sys.executable, __file__, "--worker", "--mode", mode, "--worker-out", str(out),
               "--model", args.model, "--num-spec", str(args.num_spec), "--depth", str(args.depth),
               "--new-tokens", str(args.new_tokens), "--single", str(args.single), "--batch", str(args.batch)]
        if args.cudagraphs:
            cmd.append("--cudagraphs")
        env = dict(os.environ, VLLM_USE_V2_MODEL_RUNNER="0", VLLM_ENABLE_V1_MULTIPROCESSING="0")
        if mode == "suffix-nobackoff":
            env["ARCTIC_INFERENCE_SUFFIX_BACKOFF"] = "0"
            cmd[cmd.index("--mode") + 1] = "suffix"
        subprocess.run(cmd, check=True, env=env)
        r = json.loads(out.read_text())
        r["mode"] = mode
        return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="/opt/models/copy-llama")
    ap.add_argument("--num-spec", type=int, default=32)
    ap.add_argument("--depth", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--single", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--cudagraphs", action="store_true", help="default: eager (fast startup)")
    ap.add_argument("--also-no-backoff", action="store_true", help="extra run with the back-off off")
    ap.add_argument("--out", type=Path, default=Path("suffix_gpu.json"))
    ap.add_argument("--md", type=Path)
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--mode", default="none")
    ap.add_argument("--worker-out")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    modes = ["none", "suffix"] + (["suffix-nobackoff"] if args.also_no_backoff else [])
    runs = {m: run_mode(args, m) for m in modes}
    base = runs["none"]
    table = []
    for m in modes[1:]:
        for ph in ("a_single", "b_batch_first", "c_batch_again"):
            r, b = runs[m][ph], base[ph]
            same = sum(x == y for x, y in zip(r["outputs"], b["outputs"]))
            s = r["spec"]
            table.append({"mode": m, "phase": ph, "speedup": b["seconds"] / r["seconds"],
                          "base_tok_s": b["tok_per_s"], "spec_tok_s": r["tok_per_s"],
                          "accepted_per_draft": s["spec_decode_num_accepted_tokens"] / max(1, s["spec_decode_num_drafts"]),
                          "draft_acceptance": s["spec_decode_num_accepted_tokens"] / max(1, s["spec_decode_num_draft_tokens"]),
                          "outputs_identical": f"{same}/{len(b['outputs'])}"})
    for runs_m in runs.values():
        for ph in ("a_single", "b_batch_first", "c_batch_again"):
            runs_m[ph].pop("outputs")
    report = {"args": {k: str(v) for k, v in vars(args).items()}, "summary": table, "runs": runs}
    args.out.write_text(json.dumps(report, indent=1))
    lines = ["# Suffix decoding on GPU (copy-llama, bf16)", "",
             f"`{' '.join(sys.argv)}`; eager={not args.cudagraphs}, num_speculative_tokens={args.num_spec}, "
             f"max_tree_depth={args.depth}, {args.new_tokens} new tokens per request.", "",
             "| mode | phase | speedup vs no spec | tok/s no spec | tok/s spec | accepted/draft | draft acceptance | outputs identical (bf16) |",
             "|---|---|---|---|---|---|---|---|"]
    for t in table:
        lines.append(f"| {t['mode']} | {t['phase']} | x{t['speedup']:.2f} | {t['base_tok_s']:.0f} | {t['spec_tok_s']:.0f} "
                     f"| {t['accepted_per_draft']:.2f} | {t['draft_acceptance']:.2f} | {t['outputs_identical']} |")
    md = "\n".join(lines) + "\n"
    print(md)
    if args.md:
        args.md.write_text(md)


if __name__ == "__main__":
    main()
