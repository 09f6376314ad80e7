"""Loads the real plugin in a fresh interpreter with the RL knobs and reports JSON.

Run by test_rl_plugin_wiring.py (patched classes and exported env must not
leak into the pytest process). argv[1] is a config-only Llama directory. The
last stdout line is the JSON report.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from typing import Any

KEY = "arctic_max_tokens_per_seq"


def select_cpu_platform() -> None:
    """This box has no GPU: use vLLM's CPU platform so configs can be built."""
    import vllm.platforms
    from vllm.platforms.cpu import CpuPlatform

    platform = CpuPlatform()
    vllm.platforms._current_platform = platform
    vllm.platforms.current_platform = platform


def qualname(obj: Any) -> str:
    return getattr(obj, "__qualname__", repr(obj))


def main(model: str) -> dict[str, Any]:
    report: dict[str, Any] = {}
    from arctic_inference.patching import applied_patches
    from arctic_inference.vllm.plugin import load_plugin

    report["loaded"] = load_plugin()
    report["engine_patches"] = [r.patch for r in applied_patches()]

    # vllm serve --help, through vLLM's own CLI.
    from vllm.entrypoints.cli.main import main as vllm_main

    argv, sys.argv = sys.argv, ["vllm", "serve", "--help=ArcticInference"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        vllm_main()
    sys.argv = argv
    report["serve_help"] = " ".join(out.getvalue().split())

    # vllm serve flags -> EngineArgs -> config -> env mirrored for workers.
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.openai.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    args = parser.parse_args(
        [
            "--model",
            model,
            "--skip-tokenizer-init",
            "--fp32-lm-head",
            "--per-seq-max-tokens",
            "--sleep-keep-drafter",
        ]
    )
    config = AsyncEngineArgs.from_cli_args(args).create_engine_config()
    report["cli_arctic"] = config.additional_config.get("arctic")
    report["env"] = {
        k: os.environ.get(k)
        for k in ("ARCTIC_FP32_LM_HEAD", "ARCTIC_PER_SEQ_MAX_TOKENS", "ARCTIC_SLEEP_KEEP_DRAFTER")
    }

    # Early validation at SamplingParams construction (class patched).
    from vllm import SamplingParams

    try:
        SamplingParams(n=4, extra_args={KEY: [3, 4]})
        report["bad_list_error"] = None
    except ValueError as exc:
        report["bad_list_error"] = str(exc)

    # A request through the real front end (class-level patches), fanned out
    # by ParentRequest, each child serialised the way it travels to a
    # separate engine-core process and decoded there (__post_init__ re-runs
    # the validation on the child).
    from copy import copy

    from vllm.v1.engine import EngineCoreRequest
    from vllm.v1.engine.input_processor import InputProcessor
    from vllm.v1.engine.parallel_sampling import ParentRequest
    from vllm.v1.serial_utils import MsgpackDecoder, MsgpackEncoder

    processor = InputProcessor(config)
    params = SamplingParams(n=4, seed=11, ignore_eos=True, extra_args={KEY: [2, 5, 3, 8]})
    request = processor.process_inputs(
        "r",
        {"type": "token", "prompt_token_ids": [1, 2, 3]},
        params,
        supported_tasks=("generate",),
    )
    processor.assign_request_id(request)
    report["request_max_tokens"] = request.sampling_params.max_tokens
    parent = ParentRequest(request)
    encoder, decoder = MsgpackEncoder(), MsgpackDecoder(EngineCoreRequest)
    decoded = []
    for idx in range(4):
        child_id, child_params = parent.get_child_info(idx)
        child = copy(request)
        child.request_id, child.sampling_params = child_id, child_params
        back = decoder.decode(encoder.encode(child))
        decoded.append(
            {
                "max_tokens": back.sampling_params.max_tokens,
                "seed": back.sampling_params.seed,
                "n": back.sampling_params.n,
                "extra_args": back.sampling_params.extra_args,
            }
        )
    report["children_decoded"] = decoded
    parent_back = decoder.decode(encoder.encode(request))
    report["parent_decoded_max_tokens"] = parent_back.sampling_params.max_tokens

    # Worker side, as WorkerBase.__init__ does it inside a worker process.
    from vllm.model_executor.layers.logits_processor import LogitsProcessor
    from vllm.v1.worker.gpu_worker import Worker

    from arctic_inference.vllm.patch_set import apply_side
    from arctic_inference.vllm.runtime_check import banner

    report["worker_features"] = list(apply_side("worker", config))
    report["apply_head"] = qualname(LogitsProcessor._apply_head)
    report["worker_sleep"] = qualname(Worker.sleep)
    report["worker_wake_up"] = qualname(Worker.wake_up)
    report["banner"] = banner("V1 runner")
    return report


if __name__ == "__main__":
    select_cpu_platform()
    print("\n" + json.dumps(main(sys.argv[1]), default=repr))
