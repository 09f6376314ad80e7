"""One engine process of the sequence-parallel bench: runs timed phases on request.

Reads one JSON command per stdin line (``{"phase": "ttft16k" | "decode64", "min_s": 10}``)
and answers one JSON line on stdout, so the controller can interleave phases of
several resident engines. A config the plugin refuses answers ``{"refused": ...}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

TTFT_PROMPT_TOKENS = 16384
DECODE_REQUESTS = 64
DECODE_TOKENS = 128


def graph_kwargs(sp: int, eager: bool) -> dict:
    """Engine arguments for the graph setting: SP engines get the full graphs they can
    capture, the TP baseline vLLM's own default (compiled, full and piecewise graphs), so
    each configuration runs at its best; ``eager`` runs all of them eagerly."""
    if eager:
        return {"enforce_eager": True}
    # What SP and shift can capture: full CUDA graphs without torch.compile.
    from arctic_inference.vllm.ulysses.validate import SP_GRAPH_COMPILATION

    return {"compilation_config": dict(SP_GRAPH_COMPILATION)} if sp > 1 else {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--tp", type=int, required=True)
    parser.add_argument("--sp", type=int, required=True)
    parser.add_argument("--shift", action="store_true")
    parser.add_argument("--eager", action="store_true", help="no CUDA graphs for any engine")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.28)
    args = parser.parse_args()

    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    arctic = {"ulysses_sequence_parallel_size": args.sp, "enable_shift_parallel": args.shift}
    try:
        llm = LLM(
            args.model,
            tensor_parallel_size=args.tp,
            **graph_kwargs(args.sp, args.eager),
            enable_prefix_caching=False,
            max_model_len=TTFT_PROMPT_TOKENS + 64,
            gpu_memory_utilization=args.gpu_memory_utilization,
            additional_config={"arctic": arctic},
        )
    except ValueError as err:
        refused = json.dumps({"refused": str(err).splitlines()[0]})
        for _ in sys.stdin:
            print(refused, flush=True)
        return
    vocab = llm.get_tokenizer().vocab_size
    long_prompt = TokensPrompt(
        prompt_token_ids=[(i * 7919) % vocab for i in range(TTFT_PROMPT_TOKENS)]
    )
    short = [
        TokensPrompt(prompt_token_ids=[(i * 31 + j) % vocab for j in range(32)])
        for i in range(DECODE_REQUESTS)
    ]
    one_token = SamplingParams(temperature=0.0, max_tokens=1)
    decode = SamplingParams(temperature=0.0, max_tokens=DECODE_TOKENS, ignore_eos=True)
    llm.generate([long_prompt], one_token, use_tqdm=False)  # warm-up
    llm.generate(short, decode, use_tqdm=False)
    print(json.dumps({"ready": True}), flush=True)

    for line in sys.stdin:
        command = json.loads(line)
        started = time.perf_counter()
        samples: list[float] = []
        while time.perf_counter() - started < command["min_s"]:
            if command["phase"] == "ttft16k":
                t0 = time.perf_counter()
                llm.generate([long_prompt], one_token, use_tqdm=False)
                samples.append(time.perf_counter() - t0)
            else:
                t0 = time.perf_counter()
                out = llm.generate(short, decode, use_tqdm=False)
                tokens = sum(len(o.outputs[0].token_ids) for o in out)
                samples.append(tokens / (time.perf_counter() - t0))
        print(
            json.dumps(
                {
                    "phase": command["phase"],
                    "value": statistics.median(samples),
                    "samples": len(samples),
                    "seconds": time.perf_counter() - started,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
