"""One engine run for test_plugin_gpu.py; prints a JSON report as its last line.

Runs in its own process so the plugin switch (an env variable read at plugin
load) differs between runs. Greedy decoding in float32 without prefix caching
makes token ids comparable across runs.
"""

from __future__ import annotations

import json
import os
import sys

MODEL = os.environ.get("ARCTIC_GPU_TEST_MODEL", "/opt/models/tiny-llama")
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "Snow falls quietly on",
    "1, 2, 3, 4,",
]


def worker_view(worker: object) -> dict:
    runner = getattr(worker, "model_runner", None)
    config = getattr(worker, "vllm_config", None)
    return {
        "runner": f"{type(runner).__module__}.{type(runner).__qualname__}",
        "arctic": (getattr(config, "additional_config", None) or {}).get("arctic"),
    }


def main() -> None:
    enabled = os.environ.get("ARCTIC_INFERENCE_ENABLED") == "1"
    extra: dict = {}
    if enabled:
        from arctic_inference.vllm.args import ArcticArg, register_arctic_arg

        register_arctic_arg(
            ArcticArg(name="arctic_gpu_probe", type=int, default=0, help="GPU test probe.")
        )
        extra["additional_config"] = {"arctic": {"arctic_gpu_probe": 7}}

    from vllm import LLM, SamplingParams

    llm = LLM(
        MODEL,
        dtype="float32",
        enforce_eager=True,
        enable_prefix_caching=False,
        max_model_len=512,
        gpu_memory_utilization=0.3,
        seed=0,
        **extra,
    )
    params = SamplingParams(temperature=0.0, max_tokens=24, ignore_eos=True)
    outputs = llm.generate(PROMPTS, params, use_tqdm=False)
    report = {
        "enabled": enabled,
        "token_ids": [list(o.outputs[0].token_ids) for o in outputs],
        "workers": llm.collective_rpc(worker_view),
    }
    if enabled:
        from arctic_inference.patching import applied_patches

        report["patches"] = [r.patch for r in applied_patches()]
    sys.stdout.flush()
    print("\n" + json.dumps(report))


if __name__ == "__main__":
    main()
