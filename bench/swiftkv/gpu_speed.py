"""SwiftKV vs plain Llama of the same shape on one GPU, side by side in one run.

Both engines stay alive at once, each in its own process (this script
re-invoked with ``--serve``, commands over stdin/stdout), each with its share of
GPU memory, so the phases can be interleaved A B A B ... without rebuilding
engines. Phases:

* prefill: ``--prompts`` prompts x ``--prompt-len`` random tokens, 1 new token,
  prefix caching off, the batch sent ``loops`` times; throughput = prompt
  tokens / s.
* decode: the same number of prompts x ``--decode-prompt-len`` tokens,
  ``--decode-tokens`` new tokens each; throughput = generated tokens / s.

Phase length: after one warm-up batch per engine, each engine is timed over a
calibration run of at least ``CALIBRATION_S`` seconds (doubling the loop count
until it lasts that long), and ``loops`` is sized from the faster engine's time
per batch with a 30 % margin; both engines use the same count. A single batch
is far too short to time (a 32 x 2k prefill batch takes a fraction of a
second), which is what made earlier phases come out short. If any timed phase
still lasts less than ``--min-phase``, the whole phase (all repetitions of both
engines) is run again with the loop count scaled up, at most ``MAX_RETRIES``
times; a phase that stays short makes the script exit 1.

Also reported: KV-cache bytes per token of each engine, measured from the
allocated cache tensors (sum over attention layers of bytes / slots).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine_proc import EngineProcess  # noqa: E402


def serve(model: str, gpu_util: float, max_batched: int) -> None:
    """Engine process: read JSON commands from stdin, answer one JSON line each."""
    os.environ.setdefault("VLLM_USE_V2_MODEL_RUNNER", "0")
    import random

    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(
        model=model,
        dtype="bfloat16",
        gpu_memory_utilization=gpu_util,
        seed=0,
        enable_prefix_caching=False,
        max_model_len=4096,
        skip_tokenizer_init=True,
        max_num_batched_tokens=max_batched,
        max_num_seqs=256,
    )
    vocab = int(json.loads((Path(model) / "config.json").read_text())["vocab_size"])

    def kv_bytes_per_token(m):
        import torch

        total, slots = 0, None
        for mod in m.modules():
            cache = getattr(mod, "kv_cache", None)
            if isinstance(cache, torch.Tensor) and cache.numel() and hasattr(mod, "head_size"):
                total += cache.numel() * cache.element_size()
                slots = cache.shape[0] * cache.shape[2]  # (blocks, heads, block_size, 2*head)
        return total / slots if slots else 0.0

    out = sys.__stdout__
    print(
        json.dumps({"ready": True, "kv_bytes_per_token": llm.apply_model(kv_bytes_per_token)[0]}),
        file=out,
        flush=True,
    )
    for line in sys.stdin:
        cmd = json.loads(line)
        rng = random.Random(cmd.get("seed", 0))
        prompts = [
            TokensPrompt(
                prompt_token_ids=[rng.randrange(3, vocab) for _ in range(cmd["prompt_len"])]
            )
            for _ in range(cmd["prompts"])
        ]
        sp = SamplingParams(
            temperature=0.0, max_tokens=cmd["new_tokens"], ignore_eos=True, detokenize=False
        )
        tokens = 0
        t0 = time.perf_counter()
        for _ in range(cmd["loops"]):
            outs = llm.generate(prompts, sp, use_tqdm=False)
            tokens += sum(len(o.outputs[0].token_ids) for o in outs)
        dt = time.perf_counter() - t0
        print(
            json.dumps(
                {
                    "seconds": dt,
                    "generated": tokens,
                    "prompt_tokens": cmd["loops"] * cmd["prompts"] * cmd["prompt_len"],
                }
            ),
            file=out,
            flush=True,
        )


CALIBRATION_S = 2.0
MARGIN = 1.3
MAX_RETRIES = 2


def loops_for(seconds_per_loop: float, min_phase: float, margin: float = MARGIN) -> int:
    """Batches per phase so that a phase at this speed lasts ``margin * min_phase``."""
    if seconds_per_loop <= 0:
        raise ValueError(f"seconds per loop must be positive, got {seconds_per_loop}")
    return max(1, math.ceil(margin * min_phase / seconds_per_loop))


def rescaled_loops(loops: int, shortest_s: float, min_phase: float, margin: float = MARGIN) -> int:
    """A loop count at which the shortest phase seen would have lasted ``margin * min_phase``."""
    return max(loops + 1, loops_for(shortest_s / loops, min_phase, margin))


def calibrate(engine: EngineProcess, cmd: dict, seconds: float = CALIBRATION_S) -> float:
    """Seconds per batch, from a run of at least ``seconds`` (loop count doubled until then)."""
    loops = 1
    while True:
        r = engine.run(**cmd, loops=loops, seed=99)
        if r["seconds"] >= seconds:
            return r["seconds"] / loops
        loops *= 2


def _engine(name: str, model: str, a) -> EngineProcess:
    argv = [__file__, "--serve", model, "--gpu-util", str(a.gpu_util)]
    argv += ["--max-batched", str(a.max_batched)]
    env = dict(os.environ, VLLM_ENABLE_V1_MULTIPROCESSING="0", ARCTIC_INFERENCE_ENABLED="1")
    return EngineProcess(name, argv, a.logdir / f"engine_{name}.log", env=env)


def summary(values: list[float]) -> dict:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def run_phase(
    engines: list[EngineProcess], phase: str, cmd: dict, loops: int, reps: int, key: str
) -> dict[str, list[dict]]:
    """``reps`` interleaved repetitions (A B, B A, ...) of one phase at ``loops`` batches."""
    rows: dict[str, list[dict]] = {e.name: [] for e in engines}
    for rep in range(reps):
        for e in engines if rep % 2 == 0 else engines[::-1]:
            r = e.run(**cmd, loops=loops, seed=rep)
            r["tok_per_s"] = r[key] / r["seconds"]
            rows[e.name].append(r)
            print(
                f"{phase} rep {rep} {e.name}: {r['tok_per_s']:.0f} tok/s "
                f"({r['seconds']:.1f} s, {loops} batches)",
                flush=True,
            )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", metavar="MODEL")
    ap.add_argument("--swiftkv", default="/opt/models/small-swiftkv")
    ap.add_argument("--llama", default="/opt/models/small-llama")
    ap.add_argument("--gpu-util", type=float, default=0.4)
    ap.add_argument("--max-batched", type=int, default=16384)
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--prompt-len", type=int, default=2048)
    ap.add_argument("--decode-prompt-len", type=int, default=128)
    ap.add_argument("--decode-tokens", type=int, default=256)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-phase", type=float, default=10.0)
    ap.add_argument("--phases", default="prefill,decode")
    ap.add_argument("--out", type=Path, default=Path("swiftkv_gpu.json"))
    ap.add_argument("--logdir", type=Path, default=Path("."))
    a = ap.parse_args()
    if a.serve:
        serve(a.serve, a.gpu_util, a.max_batched)
        return 0
    engines = [
        _engine("swiftkv", a.swiftkv, a),
        _engine("llama", a.llama, a),
    ]
    phases = {
        "prefill": dict(prompts=a.prompts, prompt_len=a.prompt_len, new_tokens=1),
        "decode": dict(
            prompts=a.prompts, prompt_len=a.decode_prompt_len, new_tokens=a.decode_tokens
        ),
    }
    result: dict = {
        "args": {k: str(v) for k, v in vars(a).items()},
        "kv_bytes_per_token": {e.name: e.info["kv_bytes_per_token"] for e in engines},
        "phases": {},
    }
    failed = False
    try:
        for phase in a.phases.split(","):
            cmd = phases[phase]
            for e in engines:  # one-time costs of the first batch
                e.run(**cmd, loops=1, seed=98)
            per_loop = {e.name: calibrate(e, cmd) for e in engines}
            loops = loops_for(min(per_loop.values()), a.min_phase)
            key = "prompt_tokens" if phase == "prefill" else "generated"
            attempts = []
            for attempt in range(MAX_RETRIES + 1):
                rows = run_phase(engines, phase, cmd, loops, a.reps, key)
                short = [
                    round(r["seconds"], 1)
                    for rs in rows.values()
                    for r in rs
                    if r["seconds"] < a.min_phase
                ]
                attempts.append({"loops": loops, "phases_under_min": short})
                if not short or attempt == MAX_RETRIES:
                    break
                shortest = min(r["seconds"] for rs in rows.values() for r in rs)
                print(
                    f"WARNING {phase}: {len(short)} timed phases under {a.min_phase} s: "
                    f"{short}; running the phase again",
                    flush=True,
                )
                loops = rescaled_loops(loops, shortest, a.min_phase)
            failed = failed or bool(short)
            loops = attempts[-1]["loops"]
            tps = {n: [r["tok_per_s"] for r in rs] for n, rs in rows.items()}
            ratios = [s / base for s, base in zip(tps["swiftkv"], tps["llama"])]
            result["phases"][phase] = {
                "loops": loops,
                "calibration_s_per_loop": per_loop,
                "attempts": attempts,
                "runs": rows,
                "tok_per_s": {n: summary(v) for n, v in tps.items()},
                "ratio_per_rep": summary(ratios),
                "phases_under_min": short,
                "ratio_of_medians": statistics.median(tps["swiftkv"])
                / statistics.median(tps["llama"]),
            }
            p = result["phases"][phase]
            a.out.write_text(json.dumps(result, indent=2))
            print(
                f"{phase}: swiftkv/llama x{p['ratio_of_medians']:.2f} (per-rep ratio median "
                f"x{p['ratio_per_rep']['median']:.2f}, min x{p['ratio_per_rep']['min']:.2f}, "
                f"max x{p['ratio_per_rep']['max']:.2f})",
                flush=True,
            )
    finally:
        for e in engines:
            e.close()
        a.out.write_text(json.dumps(result, indent=2))
    print(f"kv bytes per token: {result['kv_bytes_per_token']}")
    if failed:
        print(f"FAILED: a phase stayed under {a.min_phase} s after {MAX_RETRIES} retries")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
