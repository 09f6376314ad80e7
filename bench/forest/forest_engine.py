"""One engine in one configuration, kept alive and driven by ``forest_speed.py``.

Configurations: ``flash`` (FLASH_ATTN, vLLM's cascade off), ``cascade`` (FLASH_ATTN with
vLLM's single-prefix cascade on), ``forest`` (the forest fork, default knobs), ``fork``
(the plugin on without a forest config: the fork on upstream's path, so set against
``flash`` it measures what the plugin itself costs a step). A command
names a workload and a number of rounds; the answer is the generated tokens and the
time they took. Prompts are prefix-cache hits after the parent's warm-up round, so a
timed phase is decode-dominated. A ``profile`` command runs one profiled round and
returns the attention-kernel time per decode step.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
from forest_workloads import make_workloads  # noqa: E402
from host_profile import host_profile  # noqa: E402
from phase import timed_phase  # noqa: E402

CONFIGS = ("flash", "cascade", "forest", "fork")
#: The configurations with the plugin on (the others are vLLM's own FlashAttention).
PLUGIN_ON = ("forest", "fork")
ATTENTION_KERNELS = ("flash", "fmha", "mha_fwd", "merge_attn")
INDEX_KERNELS = ("index", "gather")


def engine_kwargs(
    config: str,
    model: str,
    cudagraph_mode: str | None,
    gpu_util: float,
    forest_full_graphs: bool = False,
    engine_core_process: bool = False,
) -> dict:
    """``forest_full_graphs`` adds ``"full_cuda_graphs": true`` to forest's config;
    ``engine_core_process`` (vLLM's default layout) reads forest's counters through the
    stats extension (:mod:`forest_stats_ext`)."""
    knobs = json.dumps({"full_cuda_graphs": True} if forest_full_graphs else {})
    arctic = {"forest_cascade_attn_configs": knobs} if config == "forest" else {}
    # Every configuration runs vLLM's default graphs unless told: forest's grouped steps
    # run piecewise inside an engine with full graphs (arctic_inference.vllm.attention.dispatch).
    mode = cudagraph_mode
    kwargs = dict(
        model=model,
        attention_backend="FLASH_ATTN",
        block_size=16,
        dtype="bfloat16",
        enable_prefix_caching=True,
        disable_cascade_attn=config != "cascade",
        max_model_len=8192,
        gpu_memory_utilization=gpu_util,
        seed=0,
        additional_config={"arctic": arctic},
    )
    if engine_core_process:
        kwargs["worker_extension_cls"] = "forest_stats_ext.ForestStatsExtension"
    if mode is not None:
        kwargs["compilation_config"] = {"cudagraph_mode": mode}
    return kwargs


# Whether a round seeds each request's sampling (recorded with every saved run, so a resumed
# report never mixes runs sampled both ways; see _round).
SEEDED_SAMPLING = False


def _round(llm, workload) -> int:
    """One round of the workload, sampled as a rollout engine samples: no per-request
    seed (vLLM draws a seeded request's noise with a generator of its own, one launch per
    request and step) and token ids only (what a trainer reads). In the host profile of a
    128-request step (2026-12-02, 26.6 ms under cProfile) those were the two largest
    self times, 2.2 ms each, in every configuration. The engine's seed still seeds the
    shared generator."""
    from vllm import SamplingParams

    params = SamplingParams(
        n=workload.n,
        temperature=1.0,
        max_tokens=workload.new_tokens,
        ignore_eos=True,
        detokenize=False,
    )
    outs = llm.generate([{"prompt_token_ids": p} for p in workload.prompts], params, use_tqdm=False)
    return sum(len(c.token_ids) for o in outs for c in o.outputs)


def _profile(llm, workload) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        _round(llm, workload)
        torch.cuda.synchronize()
    attention_us = index_us = total_us = 0.0
    kernels: dict[str, float] = {}
    for event in prof.key_averages():
        device_us = getattr(event, "device_time_total", None) or getattr(
            event, "cuda_time_total", 0.0
        )
        name = event.key.lower()
        total_us += device_us
        if any(k in name for k in ATTENTION_KERNELS):
            attention_us += device_us
            kernels[event.key[:120]] = device_us
        elif any(k in name for k in INDEX_KERNELS):
            index_us += device_us
    steps = workload.new_tokens  # every request decodes together, one token a step
    return {
        "decode_steps": steps,
        "attention_us_per_step": attention_us / steps,
        "index_gather_us_per_step": index_us / steps,
        "gpu_us_total": total_us,
        "attention_kernels_us": dict(sorted(kernels.items(), key=lambda kv: -kv[1])[:12]),
        "host": host_profile(lambda: _round(llm, workload), steps=steps),
    }


def serve(args) -> None:
    """Child process: one engine for the whole benchmark, one JSON command per line."""
    from engine_proc import serve_loop
    from vllm import LLM

    from arctic_inference.vllm.attention.planner import STATS

    engine_core_process = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1") != "0"
    t0 = time.time()
    llm = LLM(
        **engine_kwargs(
            args.config,
            args.model,
            args.cudagraph_mode,
            args.gpu_util,
            args.forest_full_graphs,
            engine_core_process,
        )
    )
    started = round(time.time() - t0, 1)
    workloads = make_workloads()

    def stats() -> dict[str, int]:
        return llm.collective_rpc("forest_stats")[0] if engine_core_process else dict(STATS)

    def handle(cmd: dict) -> dict:
        workload = workloads[cmd["workload"]]
        if cmd.get("profile"):
            if engine_core_process:
                return {"error": "profiling needs the engine in this process (--in-process)"}
            return {"profile": _profile(llm, workload)}
        before = stats()
        phase = timed_phase(
            lambda _k: _round(llm, workload),
            min_rounds=cmd["rounds"],
            min_seconds=cmd.get("min_s", 0.0),
        )
        after = stats()
        record = phase.record()
        return {
            "tokens": phase.tokens,
            "rounds": phase.rounds,
            "elapsed_s": phase.seconds,
            "tokens_per_s": phase.tokens_per_s,
            "round_seconds": record["round_seconds"],
            "stall_share": record["stall_share"],
            "forest_planned_steps": after["planned"] - before["planned"],
            "forest_full_graph_steps": after["static_full_grouped"] - before["static_full_grouped"],
        }

    serve_loop(handle, {"config": args.config, "engine_start_s": started})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--config", choices=CONFIGS, required=True)
    parser.add_argument("--cudagraph-mode", default=None)
    parser.add_argument("--gpu-util", type=float, default=0.28)
    parser.add_argument("--forest-full-graphs", action="store_true")
    serve(parser.parse_args())
    return 0


if __name__ == "__main__":
    sys.exit(main())
