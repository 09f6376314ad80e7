"""The plugin entry point against the real vLLM 0.26.0: gate table and load paths.

Rows that patch vLLM run in a fresh interpreter (plugin_probe.py) so the
patched classes and exported env never leak into this test process; rows that
must leave vLLM untouched run here and prove that they did.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

from arctic_inference import envs  # noqa: E402
from arctic_inference.patching import applied_patches  # noqa: E402
from arctic_inference.vllm import plugin  # noqa: E402

PROBE = Path(__file__).with_name("plugin_probe.py")
REPO = Path(__file__).resolve().parents[2]
ENGINE_PATCHES = ["EngineArgsPatch", "WorkerBasePatch", "EngineCorePatch"]
TINY_LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 256,
    "max_position_embeddings": 128,
    "rms_norm_eps": 1e-5,
    "torch_dtype": "float32",
}


def run_probe(scenario: str, *extra: str, env: dict[str, str]) -> tuple[dict[str, Any], str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ARCTIC_")}
    full_env.pop("VLLM_USE_V2_MODEL_RUNNER", None)
    full_env.update(
        {
            "ARCTIC_INFERENCE_ENABLED": "1",
            "ARCTIC_INFERENCE_SKIP_PLATFORM_CHECK": "1",
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(REPO),
            **env,
        }
    )
    proc = subprocess.run(
        [sys.executable, str(PROBE), scenario, *extra],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"probe {scenario} failed:\n{output[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), output


@pytest.fixture(scope="module")
def entry_point_run() -> tuple[dict[str, Any], str]:
    # A misspelt setting too: the load must say that nothing reads it.
    return run_probe(
        "entry_point",
        env={"VLLM_USE_V2_MODEL_RUNNER": "1", "ARCTIC_INFERENCE_SUFIX_POLICY": "cost"},
    )


@pytest.fixture(scope="module")
def paths_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    model = tmp_path_factory.mktemp("tiny-llama-config")
    (model / "config.json").write_text(json.dumps(TINY_LLAMA_CONFIG))
    return run_probe("paths", str(model), env={})[0]


# --- gate table ---------------------------------------------------------------


def test_gate_disabled_leaves_vllm_vanilla(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(envs.ENABLED, raising=False)
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    before = applied_patches()
    assert plugin.load_plugin(target_version="0.0.1") is False  # not even checked
    plugin.arctic_inference_plugin()
    assert not plugin.is_loaded()
    assert applied_patches() == before
    assert "VLLM_USE_V2_MODEL_RUNNER" not in os.environ


def test_gate_enabled_and_matching_patches(entry_point_run: tuple[dict, str]) -> None:
    first = entry_point_run[0]["first"]
    assert first["loaded"] is True
    assert first["patches"][:3] == ENGINE_PATCHES
    assert first["engine_args_bound"] == "EngineArgsPatch.create_engine_config"
    assert first["engine_core_bound"] == "EngineCorePatch.__init__"
    assert first["worker_base_bound"] == "WorkerBasePatch.__init__"


def test_gate_enabled_mismatch_raises_with_the_fixes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(envs.ENABLED, "1")
    monkeypatch.setenv(envs.SKIP_PLATFORM_CHECK, "1")
    monkeypatch.delenv(envs.SKIP_VERSION_CHECK, raising=False)
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    before = applied_patches()
    with pytest.raises(RuntimeError) as info:
        plugin.load_plugin(target_version="0.25.0")
    message = str(info.value)
    assert "vLLM 0.25.0" in message and f"vLLM {plugin.installed_vllm_version()}" in message
    assert "pip install vllm==0.25.0" in message
    assert envs.ENABLED in message and f"{envs.SKIP_VERSION_CHECK}=1" in message
    assert applied_patches() == before and not plugin.is_loaded()
    assert "VLLM_USE_V2_MODEL_RUNNER" not in os.environ


def test_gate_enabled_mismatch_skipped_patches() -> None:
    report, output = run_probe("mismatch_skip", env={envs.SKIP_VERSION_CHECK: "1"})
    assert report["active"] is True and report["loaded"] is True
    assert report["patches"][:3] == ENGINE_PATCHES
    assert "targets vLLM 0.25.0 but vLLM 0.26.0 is installed" in output


# --- load behaviour -------------------------------------------------------------


def test_entry_point_loads_once_and_forces_v1(entry_point_run: tuple[dict, str]) -> None:
    report, output = entry_point_run
    first, again = report["first"], report["again"]
    assert again["patches"] == first["patches"], "a second plugin call must not re-patch"
    assert first["v2_env"] == "0" and first["v2_vllm_envs"] is False
    assert "VLLM_USE_V2_MODEL_RUNNER=1 was set" in output  # the user is told
    assert (
        "ARCTIC_INFERENCE_SUFIX_POLICY is set but Arctic Inference does not read it; "
        "did you mean ARCTIC_INFERENCE_SUFFIX_POLICY?" in output
    )


def test_bad_enable_value_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(envs.ENABLED, "yes please")
    with pytest.raises(ValueError, match="ARCTIC_INFERENCE_ENABLED='yes please' is not a boolean"):
        plugin.arctic_inference_plugin()


def test_platform_check_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.platforms import current_platform

    if current_platform.is_cuda():
        pytest.skip("this machine is a CUDA platform; the check passes")
    monkeypatch.setenv(envs.ENABLED, "1")
    monkeypatch.delenv(envs.SKIP_PLATFORM_CHECK, raising=False)
    with pytest.raises(RuntimeError, match=f"{envs.SKIP_PLATFORM_CHECK}=1"):
        plugin.load_plugin()
    assert not plugin.is_loaded()


def test_python_api_path_backfills_and_lands_values(paths_run: dict[str, Any]) -> None:
    assert paths_run["api_loaded_during_init"] is True
    assert paths_run["api_backfill"] == 3
    assert paths_run["api_config"]["arctic"]["arctic_probe_knob"] == 3


def test_cli_path_parses_lands_and_mirrors(paths_run: dict[str, Any]) -> None:
    assert paths_run["cli_type"] == "AsyncEngineArgs"
    assert paths_run["cli_value"] == 7
    assert paths_run["cli_config"]["arctic"]["arctic_probe_knob"] == 7
    assert paths_run["mirrored_env"] == "7"


def test_serve_help_lists_arctic_flags(paths_run: dict[str, Any]) -> None:
    text = paths_run["serve_help"]
    assert text.startswith("ArcticInference:")
    assert (
        "--arctic-probe-knob ARCTIC_PROBE_KNOB Probe-only knob. (default: 3; env: ARCTIC_PROBE_KNOB)"
        in text
    )
    assert "(default: None)" not in text


def test_worker_side_patches_bind_on_the_real_worker(paths_run: dict[str, Any]) -> None:
    assert paths_run["worker_features"][0] == "worker-runtime-check"
    assert paths_run["worker_init_device"] == "WorkerPatch.init_device"
    assert "WorkerPatch" in paths_run["patches"]


def test_serve_plain_help_lists_the_arctic_group(paths_run: dict[str, Any]) -> None:
    """Plain --help shows groups, not flags: ours must be listed and name its flags."""
    text = paths_run["serve_plain_help"]
    assert "Config Groups:" in text and "ModelConfig" in text  # vLLM's own listing
    assert "ArcticInference Options of the Arctic Inference plugin" in text
    assert "--arctic-probe-knob" in text
    assert "Details: --help=ArcticInference." in text
    flag = paths_run["serve_flag_help"]  # vLLM's search by flag name finds ours too
    assert "--arctic-probe-knob ARCTIC_PROBE_KNOB Probe-only knob." in flag


def test_front_end_plugin_load_imports_no_worker_modules() -> None:
    """After load_general_plugins() the front end holds no more worker-only
    modules (gpu_worker, gpu_model_runner) than vanilla vLLM does."""
    vanilla, _ = run_probe("modules", env={envs.ENABLED: "0"})
    arctic, _ = run_probe("modules", env={})
    assert vanilla["loaded"] is False and arctic["loaded"] is True
    assert vanilla["present"] == [], "vanilla vLLM changed; revisit this baseline"
    assert arctic["present"] == vanilla["present"]
    print(
        "modules after plugin load: vanilla",
        vanilla["module_count"],
        "arctic",
        arctic["module_count"],
    )


# --- vllm serve --additional-config: refused the way vLLM refuses its own config ---

BAD_JSON = "{bad json"
# text given to --additional-config -> (error type, regex the message must match)
SERVE_REFUSALS = {
    BAD_JSON: (
        "pydantic_core._pydantic_core.ValidationError",
        r"validation errors? for VllmConfig\nadditional_config",
    ),
    '{"arctic": null}': (
        "builtins.ValueError",
        r'additional_config\["arctic"\] must be a mapping .* got NoneType None',
    ),
    '{"arctic": []}': (
        "builtins.ValueError",
        r'additional_config\["arctic"\] must be a mapping .* got list \[\]',
    ),
    '{"arctic": 0}': (
        "builtins.ValueError",
        r'additional_config\["arctic"\] must be a mapping .* got int 0',
    ),
    '{"artic": {"fp32_lm_head": true}}': (
        "builtins.ValueError",
        r"top-level key 'artic'; did you mean \"arctic\"\?",
    ),
    '{"arctic": {"fp32_lm_hed": true}}': (
        "builtins.ValueError",
        r"unknown key\(s\) fp32_lm_hed; registered Arctic args: .*fp32_lm_head.* Did you mean: 'fp32_lm_hed' -> 'fp32_lm_head'\?",
    ),
    '{"arctic": {"fp32_lm_head": "maybe"}}': (
        "builtins.ValueError",
        r"""additional_config\["arctic"\]\["fp32_lm_head"\]='maybe' is not a boolean""",
    ),
}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    model = tmp_path_factory.mktemp("tiny-llama-serve")
    (model / "config.json").write_text(json.dumps(TINY_LLAMA_CONFIG))
    return str(model)


def serve_errors(model: str, texts: list[str], env: dict[str, str]) -> dict[str, dict[str, Any]]:
    report, _ = run_probe("serve_configs", model, json.dumps(texts), env=env)
    assert report["loaded"] is (env.get(envs.ENABLED, "1") == "1")
    return dict(zip(texts, report["errors"], strict=True))


@pytest.fixture(scope="module")
def plugin_serve_errors(tiny_model: str) -> dict[str, dict[str, Any]]:
    return serve_errors(tiny_model, list(SERVE_REFUSALS), env={})


@pytest.mark.parametrize("text", list(SERVE_REFUSALS))
def test_serve_refuses_a_bad_additional_config_by_name(
    plugin_serve_errors: dict[str, dict[str, Any]], text: str
) -> None:
    """Each bad --additional-config stops `vllm serve` with an error of the kind vLLM
    users see for their config, naming the problem (never an AttributeError)."""
    kind, pattern = SERVE_REFUSALS[text]
    error = plugin_serve_errors[text]
    assert error["type"] == kind, error
    assert re.search(pattern, error["message"]), error["message"]


def test_serve_bad_json_error_is_stock_vllms_own(
    plugin_serve_errors: dict[str, dict[str, Any]], tiny_model: str
) -> None:
    stock = serve_errors(tiny_model, [BAD_JSON], env={envs.ENABLED: "0"})[BAD_JSON]
    assert stock["type"] == "pydantic_core._pydantic_core.ValidationError"
    assert plugin_serve_errors[BAD_JSON] == stock
