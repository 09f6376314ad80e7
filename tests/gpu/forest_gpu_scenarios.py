"""One engine, one greedy rollout workload; prints ``RESULT {json}`` (run by test_forest_gpu.py).

``--config flash``: no forest config, cascade off: vLLM's own FlashAttention when the
plugin is off (``ARCTIC_INFERENCE_ENABLED=0``), the fork with forest off when it is on;
``--config forest``: the fork with default knobs. The result names the attention backend
classes the layers were built with and the logprob of every sampled token. 8 prompts x 16 greedy copies, prompts of 1024 tokens, 64 greedy
tokens, block_size 16, prefix caching on (that is what makes the samples share blocks),
piecewise CUDA graphs for both (forest runs only without full CUDA graphs).
"""

from __future__ import annotations

import argparse
import json
import random


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--config", choices=["flash", "forest"], required=True)
    parser.add_argument("--prompt-len", type=int, default=1024)
    parser.add_argument("--new-tokens", type=int, default=64)
    args = parser.parse_args()

    from vllm import LLM, SamplingParams

    arctic = {"forest_cascade_attn_configs": "{}"} if args.config == "forest" else {}
    llm = LLM(
        args.model,
        attention_backend="FLASH_ATTN",
        block_size=16,
        dtype="bfloat16",
        enable_prefix_caching=True,
        disable_cascade_attn=True,
        max_model_len=8192,
        gpu_memory_utilization=0.6,
        seed=0,
        additional_config={"arctic": arctic},
        # Forest needs full CUDA graphs off; both configs use the same graphs.
        compilation_config={"cudagraph_mode": "PIECEWISE"},
    )
    rng = random.Random(0)
    base = [[rng.randrange(3, 340) for _ in range(args.prompt_len)] for _ in range(8)]
    # Greedy allows n=1 only: 16 copies of each prompt (they share its blocks all the same).
    prompts = [{"prompt_token_ids": tokens} for tokens in base for _ in range(16)]
    params = SamplingParams(
        n=1, temperature=0.0, max_tokens=args.new_tokens, ignore_eos=True, logprobs=0
    )
    outputs = llm.generate(prompts, params)

    from arctic_inference.vllm.attention.planner import STATS

    def backends(model):
        return sorted(
            {
                f"{m.attn_backend.__module__}.{m.attn_backend.__name__}"
                for m in model.modules()
                if hasattr(m, "attn_backend")
            }
        )

    result = {
        "config": args.config,
        "outputs": [list(c.token_ids) for o in outputs for c in o.outputs],
        "logprobs": [
            [d[t].logprob for t, d in zip(c.token_ids, c.logprobs)]
            for o in outputs
            for c in o.outputs
        ],
        "backends": llm.apply_model(backends)[0],
        "forest_planned_steps": STATS["planned"],
        "forest_skipped_steps": STATS["skipped"],
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
