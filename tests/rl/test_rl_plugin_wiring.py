"""The RL knobs and patches through the real plugin, in a fresh interpreter.

One subprocess (rl_wiring_probe.py) loads the plugin, parses ``vllm serve``
flags, builds the engine config, runs a request through the class-patched
front end and serialises its children the way they reach a separate engine
core, then applies the worker side. Predicates are checked here, in-process,
on real configs (they patch nothing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.vllm

PROBE = Path(__file__).with_name("rl_wiring_probe.py")
REPO = Path(__file__).resolve().parents[2]
FLAGS = {
    "--fp32-lm-head": "ARCTIC_FP32_LM_HEAD",
    "--per-seq-max-tokens": "ARCTIC_PER_SEQ_MAX_TOKENS",
    "--sleep-keep-drafter": "ARCTIC_SLEEP_KEEP_DRAFTER",
}


@pytest.fixture(scope="module")
def probe(tiny_llama_dir) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCTIC_")}
    env.update(
        ARCTIC_INFERENCE_ENABLED="1",
        ARCTIC_INFERENCE_SKIP_PLATFORM_CHECK="1",
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(REPO),
    )
    proc = subprocess.run(
        [sys.executable, str(PROBE), str(tiny_llama_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_serve_help_lists_each_knob_with_its_env(probe):
    for flag, env in FLAGS.items():
        assert flag in probe["serve_help"], flag
        assert env in probe["serve_help"], env


def test_cli_flags_land_in_config_and_env(probe):
    assert probe["cli_arctic"]["fp32_lm_head"] is True
    assert probe["cli_arctic"]["per_seq_max_tokens"] is True
    assert probe["cli_arctic"]["sleep_keep_drafter"] is True
    assert probe["env"] == {env: "1" for env in FLAGS.values()}


def test_engine_side_patches_active_and_validating(probe):
    for name in (
        "SamplingParamsPerSeqPatch",
        "InputProcessorPerSeqPatch",
        "ParentRequestPerSeqPatch",
    ):
        assert name in probe["engine_patches"]
        assert name in probe["banner"]
    assert "has 2 entries but n=4" in probe["bad_list_error"]


def test_children_survive_the_trip_to_the_engine_core(probe):
    assert probe["request_max_tokens"] == 8
    assert probe["parent_decoded_max_tokens"] == 8
    assert [c["max_tokens"] for c in probe["children_decoded"]] == [2, 5, 3, 8]
    assert [c["seed"] for c in probe["children_decoded"]] == [11, 12, 13, 14]
    assert all(c["n"] == 1 and not c["extra_args"] for c in probe["children_decoded"])


def test_worker_side_patches_bind(probe):
    assert {"fp32-lm-head", "sleep-keep-drafter"} <= set(probe["worker_features"])
    assert probe["apply_head"] == "FP32LMHeadPatch._apply_head"
    assert probe["worker_sleep"] == "WorkerSleepKeepDrafterPatch.sleep"
    assert probe["worker_wake_up"] == "WorkerSleepKeepDrafterPatch.wake_up"
    for name in ("FP32LMHeadPatch", "WorkerSleepKeepDrafterPatch"):
        assert name in probe["banner"]


@pytest.mark.parametrize("section", [{}, {"fp32_lm_head": False}, {"fp32_lm_head": True}])
def test_worker_predicates_follow_config_then_env(monkeypatch, section):
    from vllm.config import DeviceConfig, VllmConfig

    from arctic_inference.vllm import rl_args
    from arctic_inference.vllm.patch_set import PatchContext

    monkeypatch.setenv("ARCTIC_FP32_LM_HEAD", "1")
    monkeypatch.delenv("ARCTIC_SLEEP_KEEP_DRAFTER", raising=False)
    config = VllmConfig(
        device_config=DeviceConfig(device="cpu"), additional_config={"arctic": section}
    )
    ctx = PatchContext(side="worker", vllm_config=config)
    assert rl_args.fp32_lm_head_on(ctx) is section.get("fp32_lm_head", True)
    assert rl_args.sleep_keep_drafter_on(ctx) is False
