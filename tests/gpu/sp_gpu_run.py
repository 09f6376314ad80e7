"""One engine for the sequence-parallel GPU test: greedy float32 tokens as JSON.

Usage: python sp_gpu_run.py --tp N --sp M   (run with ARCTIC_INFERENCE_ENABLED=1)
       python sp_gpu_run.py --tp N --sp M --shift-threshold T   (shift parallelism on)
       python sp_gpu_run.py --tp N --sp 1 --no-arctic-config   (plugin off: no arctic keys)
       add --cuda-graphs for full CUDA graphs without torch.compile (else --enforce-eager)
"""

from __future__ import annotations

import argparse
import json
import os

MODEL = os.environ.get("ARCTIC_GPU_TEST_MODEL", "/opt/models/tiny-llama")
# Full graphs of the eager model, mixed batches and decodes alike (see validate.py).
GRAPHS = {"mode": "NONE", "cudagraph_mode": "FULL"}
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "In a distant galaxy, the",
    " ".join(["long context token"] * 300),  # a prefill of ~900 tokens
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tp", type=int, required=True)
    parser.add_argument("--sp", type=int, required=True)
    parser.add_argument("--no-arctic-config", action="store_true")
    parser.add_argument("--shift-threshold", type=int, default=None)
    parser.add_argument("--cuda-graphs", action="store_true")
    args = parser.parse_args()
    arctic = {} if args.no_arctic_config else {"ulysses_sequence_parallel_size": args.sp}
    if args.shift_threshold is not None:
        arctic |= {"enable_shift_parallel": True, "shift_parallel_threshold": args.shift_threshold}

    from vllm import LLM, SamplingParams

    llm = LLM(
        MODEL,
        dtype="float32",
        tensor_parallel_size=args.tp,
        enforce_eager=not args.cuda_graphs,
        compilation_config=GRAPHS if args.cuda_graphs else None,
        enable_prefix_caching=False,
        gpu_memory_utilization=0.5,
        additional_config={"arctic": arctic} if arctic else {},
    )
    outputs = llm.generate(PROMPTS, SamplingParams(temperature=0.0, max_tokens=32))
    print(json.dumps({"token_ids": [list(o.outputs[0].token_ids) for o in outputs]}))


if __name__ == "__main__":
    main()
