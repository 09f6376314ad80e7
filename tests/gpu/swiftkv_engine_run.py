"""One vLLM engine run for the SwiftKV GPU tests (a subprocess per engine).

Usage: python swiftkv_engine_run.py SPEC_JSON OUT_JSON. SPEC keys: model, dtype,
backend, eager, prefix_caching, max_batched, lengths (prompt lengths of the
batch), singles (prompt indices also run one at a time), new_tokens, rounds
(how often the batch is sent; round 2+ hit the prefix cache when it is on).
Writes ids and top-5 logprobs per request and round, and the model's path counts.
"""

import json
import os
import random
import sys
from pathlib import Path

os.environ.setdefault("VLLM_USE_V2_MODEL_RUNNER", "0")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("ARCTIC_INFERENCE_ENABLED", "1")

from vllm import LLM, SamplingParams  # noqa: E402
from vllm.inputs import TokensPrompt  # noqa: E402


def prompts_for(model: str, lengths: list[int], seed: int = 7) -> list[list[int]]:
    vocab = int(json.loads((Path(model) / "config.json").read_text())["vocab_size"])
    rng = random.Random(seed)
    return [[rng.randrange(3, vocab) for _ in range(n)] for n in lengths]


def main() -> None:
    spec = json.loads(sys.argv[1])
    out = Path(sys.argv[2])
    kw = dict(
        model=spec["model"],
        dtype=spec["dtype"],
        enforce_eager=spec["eager"],
        seed=0,
        gpu_memory_utilization=spec.get("gpu_util", 0.3),
        max_model_len=2048,
        enable_prefix_caching=spec["prefix_caching"],
        skip_tokenizer_init=True,
        enable_chunked_prefill=True,
        max_num_batched_tokens=spec["max_batched"],
        attention_config={"backend": spec["backend"]},
    )
    llm = LLM(**kw)
    prompts = prompts_for(spec["model"], spec["lengths"])
    sp = SamplingParams(
        temperature=0.0,
        max_tokens=spec["new_tokens"],
        ignore_eos=True,
        logprobs=5,
        detokenize=False,
    )

    def run(batch):
        outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in batch], sp, use_tqdm=False)
        return [
            {
                "ids": list(o.outputs[0].token_ids),
                "logprobs": [
                    {str(k): v.logprob for k, v in d.items()} for d in (o.outputs[0].logprobs or [])
                ],
            }
            for o in outs
        ]

    res = {
        "prompts": prompts,
        "rounds": [run(prompts) for _ in range(spec.get("rounds", 1))],
        "singles": {str(i): run([prompts[i]])[0] for i in spec.get("singles", [])},
    }
    counts = llm.apply_model(lambda m: dict(getattr(m.model, "counts", {})))
    res["counts"] = counts[0] if counts else {}
    out.write_text(json.dumps(res))


if __name__ == "__main__":
    main()
