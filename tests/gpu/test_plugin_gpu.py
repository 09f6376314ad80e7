"""The plugin on a real GPU: same greedy tokens as vanilla V1, banner logged.

Each engine runs in its own process (plugin_gpu_run.py), in-process engine
core (VLLM_ENABLE_V1_MULTIPROCESSING=0) so all logs land in one stream.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu

RUNNER = Path(__file__).with_name("plugin_gpu_run.py")
REPO = Path(__file__).resolve().parents[2]
BANNER_PREFIX = "Arctic Inference active (vLLM 0.26.0, V1 runner): patches=["


def plugin_discoverable_env() -> dict[str, str]:
    """PYTHONPATH additions so vLLM finds the plugin even without an install.

    If the project is installed, its entry point is already visible. Otherwise
    a throwaway dist-info that declares only the entry point is put on the path.
    """
    paths = [str(REPO)]
    names = {ep.name for ep in entry_points(group="vllm.general_plugins")}
    if "arctic_inference" not in names:
        site = Path(tempfile.mkdtemp(prefix="arctic-ep-"))
        info = site / "arctic_inference_gpu_test-0.0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: arctic-inference-gpu-test\nVersion: 0.0.0\n"
        )
        (info / "entry_points.txt").write_text(
            "[vllm.general_plugins]\n"
            "arctic_inference = arctic_inference.vllm.plugin:arctic_inference_plugin\n"
        )
        paths.append(str(site))
    existing = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join(paths + ([existing] if existing else []))}


def run_engine(enabled: bool) -> tuple[dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCTIC_")}
    env.update(plugin_discoverable_env())
    env.update(
        VLLM_ENABLE_V1_MULTIPROCESSING="0",
        VLLM_USE_FLASHINFER_SAMPLER="0",
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    if enabled:
        env["ARCTIC_INFERENCE_ENABLED"] = "1"
        env.pop("VLLM_USE_V2_MODEL_RUNNER", None)  # the plugin must pick V1 itself
    else:
        env["VLLM_USE_V2_MODEL_RUNNER"] = "0"  # vanilla on the same V1 runner
    proc = subprocess.run(
        [sys.executable, str(RUNNER)], env=env, capture_output=True, text=True, timeout=900
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"engine run (enabled={enabled}) failed:\n{log[-6000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), log


def test_plugin_matches_vanilla_v1_and_logs_banner() -> None:
    vanilla, vanilla_log = run_engine(enabled=False)
    arctic, arctic_log = run_engine(enabled=True)

    banners = [line for line in arctic_log.splitlines() if BANNER_PREFIX in line]
    print("\nvanilla token ids:", vanilla["token_ids"])
    print("arctic  token ids:", arctic["token_ids"])
    print("banner:", banners[0] if banners else "<missing>")
    print("arctic workers:", arctic["workers"])

    assert banners, f"no banner in the plugin run's log:\n{arctic_log[-6000:]}"
    assert BANNER_PREFIX not in vanilla_log
    assert "Using V2 Model Runner" not in arctic_log
    v1_runner = "vllm.v1.worker.gpu_model_runner.GPUModelRunner"
    assert [w["runner"] for w in arctic["workers"]] == [v1_runner]
    assert [w["runner"] for w in vanilla["workers"]] == [v1_runner]
    assert arctic["workers"][0]["arctic"]["arctic_gpu_probe"] == 7
    for name in ("EngineArgsPatch", "WorkerBasePatch", "EngineCorePatch", "WorkerPatch"):
        assert name in arctic["patches"] and name in banners[0]
    assert arctic["token_ids"] == vanilla["token_ids"]
    assert all(len(ids) == 24 for ids in arctic["token_ids"])
