"""One engine, two greedy workloads; prints ``RESULT {json}`` (run by test_forest_gpu.py).

``--config flash``: no forest config, cascade off: vLLM's own FlashAttention when the
plugin is off (``ARCTIC_INFERENCE_ENABLED=0``), the fork with forest off when it is on;
``--config flash-cascade``: vLLM's own FlashAttention with its single-prefix cascade
allowed (plugin off); ``--config forest``: the fork with default knobs;
``--forest-full-graphs`` adds ``"full_cuda_graphs": true`` to forest's config (static
plans inside the uniform-decode full graphs; give ``--cudagraph-mode FULL_AND_PIECEWISE``).

Workloads, both with block_size 16, prefix caching on (that is what makes requests share
blocks) and piecewise CUDA graphs (forest runs only without full CUDA graphs):

* ``rollouts``: 8 prompts x 16 greedy copies, prompts of 1024 tokens, 64 greedy tokens;
* ``one_prefix``: 64 requests, one shared 1024-token prefix and a distinct 32-token
  question each, 64 greedy tokens: the batch vLLM's own cascade is built for, so its
  two-pass rounding can be set beside forest's.

Per workload the result holds every request's ids, the logprob of each sampled token and
the top-5 logprobs of each position (to find near-ties at a first divergence), plus the
attention backend classes the layers were built with and the forest planner's counters.
"""

from __future__ import annotations

import argparse
import json
import random

TOP = 5


def workloads(prompt_len: int) -> dict[str, list[list[int]]]:
    rng = random.Random(0)
    base = [[rng.randrange(3, 340) for _ in range(prompt_len)] for _ in range(8)]
    # Greedy allows n=1 only: 16 copies of each prompt (they share its blocks all the same).
    rollouts = [tokens for tokens in base for _ in range(16)]
    prefix = [rng.randrange(3, 340) for _ in range(prompt_len)]
    one_prefix = [prefix + [rng.randrange(3, 340) for _ in range(32)] for _ in range(64)]
    return {"rollouts": rollouts, "one_prefix": one_prefix}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--config", choices=["flash", "flash-cascade", "forest"], required=True)
    parser.add_argument("--prompt-len", type=int, default=1024)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--cudagraph-mode", default="PIECEWISE")
    parser.add_argument("--forest-full-graphs", action="store_true")
    args = parser.parse_args()

    from vllm import LLM, SamplingParams

    knobs = json.dumps({"full_cuda_graphs": True} if args.forest_full_graphs else {})
    arctic = {"forest_cascade_attn_configs": knobs} if args.config == "forest" else {}
    llm = LLM(
        args.model,
        attention_backend="FLASH_ATTN",
        block_size=16,
        dtype="bfloat16",
        enable_prefix_caching=True,
        disable_cascade_attn=args.config != "flash-cascade",
        max_model_len=8192,
        gpu_memory_utilization=0.6,
        seed=0,
        additional_config={"arctic": arctic},
        # Every config uses the same graphs; forest's grouped steps run piecewise.
        compilation_config={"cudagraph_mode": args.cudagraph_mode},
    )
    params = SamplingParams(
        n=1, temperature=0.0, max_tokens=args.new_tokens, ignore_eos=True, logprobs=TOP
    )

    from arctic_inference.vllm.attention.planner import STATS

    result: dict = {"config": args.config}
    for name, token_lists in workloads(args.prompt_len).items():
        before = dict(STATS)
        outputs = llm.generate([{"prompt_token_ids": t} for t in token_lists], params)
        # The prompts of one workload fill the cache for the next only through their own
        # prefixes (the two workloads share no tokens), so the order does not matter.
        completions = [c for o in outputs for c in o.outputs]
        result[name] = {
            "outputs": [list(c.token_ids) for c in completions],
            "logprobs": [
                [d[t].logprob for t, d in zip(c.token_ids, c.logprobs)] for c in completions
            ],
            "top": [
                [{str(tok): lp.logprob for tok, lp in d.items()} for d in c.logprobs]
                for c in completions
            ],
            "forest_planned_steps": STATS["planned"] - before["planned"],
            "forest_skipped_steps": STATS["skipped"] - before["skipped"],
            "forest_stats": {k: STATS[k] - before.get(k, 0) for k in STATS},
        }

    def backends(model):
        return sorted(
            {
                f"{m.attn_backend.__module__}.{m.attn_backend.__name__}"
                for m in model.modules()
                if hasattr(m, "attn_backend")
            }
        )

    def attention_layers(model):
        return sum(1 for m in model.modules() if hasattr(m, "attn_backend"))

    result["backends"] = llm.apply_model(backends)[0]
    result["attention_layers"] = llm.apply_model(attention_layers)[0]
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
