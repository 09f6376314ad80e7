"""Runs the real plugin inside a fresh process and reports what it saw as JSON.

Used by test_plugin_load.py: plugin loading changes process-wide state (env,
patched vLLM classes), so each scenario gets its own interpreter. The last
stdout line is the JSON report. On this GPU-less machine vLLM's CPU platform is
selected first (vLLM's CUDA build otherwise resolves no platform and cannot
build configs); the plugin's own platform check is skipped by the caller.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from typing import Any

PROBE_ARG = dict(
    name="arctic_probe_knob", type=int, default=3, help="Probe-only knob.", env="ARCTIC_PROBE_KNOB"
)


def select_cpu_platform() -> None:
    import vllm.platforms
    from vllm.platforms.cpu import CpuPlatform

    platform = CpuPlatform()
    vllm.platforms._current_platform = platform
    vllm.platforms.current_platform = platform


def patch_report() -> dict[str, Any]:
    import os

    import vllm.envs
    from vllm.engine.arg_utils import EngineArgs
    from vllm.v1.engine.core import EngineCore
    from vllm.v1.worker.worker_base import WorkerBase

    from arctic_inference.patching import applied_patches
    from arctic_inference.vllm import plugin

    return {
        "loaded": plugin.is_loaded(),
        "patches": [r.patch for r in applied_patches()],
        "v2_env": os.environ.get("VLLM_USE_V2_MODEL_RUNNER"),
        "v2_vllm_envs": vllm.envs.VLLM_USE_V2_MODEL_RUNNER,
        "engine_args_bound": EngineArgs.create_engine_config.__qualname__,
        "engine_core_bound": EngineCore.__init__.__qualname__,
        "worker_base_bound": WorkerBase.__init__.__qualname__,
    }


def serve_help(option: str) -> str:
    """What `vllm serve <option>` prints, whitespace-normalised."""
    from vllm.entrypoints.cli.main import main as vllm_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    argv, sys.argv = sys.argv, ["vllm", "serve", option]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            vllm_main()
    finally:
        sys.argv = argv
        FlexibleArgumentParser._search_keyword = None  # vLLM keeps it class-wide
    return " ".join(out.getvalue().split())


WORKER_ONLY_MODULES = ("vllm.v1.worker.gpu_worker", "vllm.v1.worker.gpu_model_runner")


def scenario_modules() -> dict[str, Any]:
    """Which worker-only vLLM modules a front end holds after plugin load."""
    import vllm.plugins

    from arctic_inference.vllm import plugin

    vllm.plugins.load_general_plugins()
    return {
        "loaded": plugin.is_loaded(),
        "present": [m for m in WORKER_ONLY_MODULES if m in sys.modules],
        "module_count": len(sys.modules),
    }


def scenario_entry_point() -> dict[str, Any]:
    """`import vllm; vllm.plugins.load_general_plugins()`, twice."""
    import vllm
    import vllm.plugins

    vllm.plugins.load_general_plugins()
    first = patch_report()
    vllm.plugins.plugins_loaded = False  # make vLLM call the plugin again
    vllm.plugins.load_general_plugins()
    from arctic_inference.vllm.plugin import arctic_inference_plugin

    arctic_inference_plugin()
    return {"first": first, "again": patch_report()}


def scenario_mismatch_skip() -> dict[str, Any]:
    """Version gate with a target other than the installed vLLM, check skipped."""
    from arctic_inference.vllm.plugin import load_plugin

    active = load_plugin(target_version="0.25.0")
    return {"active": active, **patch_report()}


def scenario_paths() -> dict[str, Any]:
    """Python-API backfill, `vllm serve` CLI parsing and help, worker side."""
    from arctic_inference.vllm.args import ArcticArg, register_arctic_arg

    register_arctic_arg(ArcticArg(**PROBE_ARG))
    model = sys.argv[2]
    report: dict[str, Any] = {}

    # Python API: EngineArgs is built first; the plugin loads inside its
    # __post_init__ (exactly what LLM(...) does), so the instance predates it.
    from vllm.engine.arg_utils import EngineArgs

    api_args = EngineArgs(model=model, skip_tokenizer_init=True)
    report["api_loaded_during_init"] = patch_report()["loaded"]
    report["api_backfill"] = api_args.arctic_probe_knob
    api_config = api_args.create_engine_config()
    report["api_config"] = api_config.additional_config

    # CLI: the parser `vllm serve` builds, then the values it produces.
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.openai.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    args = parser.parse_args(
        ["--model", model, "--skip-tokenizer-init", "--arctic-probe-knob", "7"]
    )
    cli_args = AsyncEngineArgs.from_cli_args(args)
    report["cli_type"] = type(cli_args).__name__
    report["cli_value"] = cli_args.arctic_probe_knob
    report["cli_config"] = cli_args.create_engine_config().additional_config
    import os

    report["mirrored_env"] = os.environ.get("ARCTIC_PROBE_KNOB")

    # `vllm serve --help=ArcticInference` and plain `vllm serve --help`,
    # through vLLM's own CLI main.
    report["serve_help"] = serve_help("--help=ArcticInference")
    report["serve_plain_help"] = serve_help("--help")
    report["serve_flag_help"] = serve_help("--help=arctic-probe-knob")

    # Worker side, as WorkerBase.__init__ would do it in a worker process.
    from vllm.v1.worker.gpu_worker import Worker

    from arctic_inference.vllm.patch_set import apply_side

    report["worker_features"] = list(apply_side("worker", api_config))
    report["worker_init_device"] = Worker.init_device.__qualname__
    report["patches"] = patch_report()["patches"]
    return report


def scenario_serve_configs() -> dict[str, Any]:
    """`vllm serve MODEL --additional-config TEXT` through vLLM's own CLI main,
    once per TEXT (argv[3] is a JSON list of them); reports what each raised.

    Every TEXT here is refused while the config is built, before any engine
    process starts, so nothing but the API server's socket is set up. A TEXT
    the plugin wrongly accepted would go on to start an engine core, which
    fails on a GPU-less machine; that error is what gets reported then.
    """
    from vllm.entrypoints.cli.main import main as vllm_main

    from arctic_inference.vllm import plugin

    model, texts = sys.argv[2], json.loads(sys.argv[3])
    errors = []
    for text in texts:
        argv, sys.argv = (
            sys.argv,
            [
                "vllm",
                "serve",
                model,
                "--skip-tokenizer-init",
                "--port",
                "0",
                "--additional-config",
                text,
            ],
        )
        try:
            vllm_main()
            errors.append({"type": None, "message": "no error"})
        except Exception as err:  # the error a user of vllm serve sees
            kind = type(err)
            errors.append({"type": f"{kind.__module__}.{kind.__qualname__}", "message": str(err)})
        finally:
            sys.argv = argv
    return {"loaded": plugin.is_loaded(), "errors": errors}


SCENARIOS = {
    "entry_point": scenario_entry_point,
    "mismatch_skip": scenario_mismatch_skip,
    "modules": scenario_modules,
    "paths": scenario_paths,
    "serve_configs": scenario_serve_configs,
}

if __name__ == "__main__":
    select_cpu_platform()
    result = SCENARIOS[sys.argv[1]]()
    # Straight to the file descriptor: vLLM's CLI main prefixes what goes
    # through sys.stdout with the process name.
    sys.stdout.flush()
    os.write(1, ("\n" + json.dumps(result, default=repr) + "\n").encode())
