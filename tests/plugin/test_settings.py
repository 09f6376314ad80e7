"""Every Arctic setting is parsed and range-checked up front, with errors that
name the variable (or key), the value given and what is valid.

The env rows go through the real plugin entry point (``load_plugin``) where
the point is "refused at load"; a refused load patches nothing, so they run in
this process.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

from arctic_inference import envs  # noqa: E402
from arctic_inference.patching import applied_patches  # noqa: E402
from arctic_inference.suffix_decoding.cache import SlipRecovery  # noqa: E402
from arctic_inference.suffix_decoding.policy import CostAwarePolicy, policy_from_env  # noqa: E402
from arctic_inference.vllm import plugin  # noqa: E402
from arctic_inference.vllm.args import ArcticArg, arctic_section  # noqa: E402
from arctic_inference.vllm.rl_args import FP32_LM_HEAD, PER_SEQ_MAX_TOKENS  # noqa: E402

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No ARCTIC_* variable from the outside; the plugin on, platform check off."""
    import os

    for name in [n for n in os.environ if n.startswith(envs.ENV_PREFIX)]:
        monkeypatch.delenv(name)
    monkeypatch.setenv(envs.ENABLED, "1")
    monkeypatch.setenv(envs.SKIP_PLATFORM_CHECK, "1")
    return monkeypatch


def refused_at_load(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> str:
    """Set one variable, load the plugin against the installed (matching) vLLM,
    and return the error; the load must have patched nothing."""
    monkeypatch.setenv(name, value)
    before = applied_patches()
    with pytest.raises(ValueError) as info:
        plugin.load_plugin(target_version=plugin.installed_vllm_version())
    assert not plugin.is_loaded() and applied_patches() == before
    return str(info.value)


# --- env variables, refused at plugin load ----------------------------------------


def test_bad_boolean_is_refused_at_load_even_when_its_check_would_not_run(
    clean_env: pytest.MonkeyPatch,
) -> None:
    # The installed vLLM matches, so the version check never reads the variable.
    message = refused_at_load(clean_env, envs.SKIP_VERSION_CHECK, "banana")
    assert f"{envs.SKIP_VERSION_CHECK}='banana' is not a boolean" in message
    assert "1/true/yes/on or 0/false/no/off" in message


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        (envs.SUFFIX_TOKEN_COST, "abc", "is not valid: expected a finite number >= 0.0"),
        (envs.SUFFIX_TOKEN_COST, "nan", "is not valid: expected a finite number >= 0.0"),
        (envs.SUFFIX_TOKEN_COST, "inf", "is not valid: expected a finite number >= 0.0"),
        (envs.SUFFIX_TOKEN_COST, "-0.5", "is out of range: expected a finite number >= 0.0"),
        (envs.SUFFIX_LONE_FACTOR, "-inf", "is not valid: expected a finite number >= 0.0"),
        (envs.SUFFIX_POLICY, "fast", "is not one of ['cost', 'legacy', 'off', 'nodraft']"),
        (envs.SUFFIX_BACKOFF, "2", "is not a boolean"),
        (envs.SUFFIX_RECOVER, "weight=heavy", "weight='heavy' is not a number"),
        (envs.SUFFIX_RECOVER, "weight=nan", "weight must be in (0, 1]"),
        (envs.SUFFIX_RECOVER, "depth=3", "unknown ARCTIC_INFERENCE_SUFFIX_RECOVER key 'depth'"),
        (FP32_LM_HEAD.env, "maybe", "is not a boolean"),  # a registered engine option
    ],
)
def test_bad_values_are_refused_at_load_naming_the_variable(
    clean_env: pytest.MonkeyPatch, name: str, value: str, expected: str
) -> None:
    message = refused_at_load(clean_env, name, value)
    assert f"{name}={value!r}" in message
    assert expected in message


def test_all_bad_variables_are_listed_at_once(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(envs.SUFFIX_TOKEN_COST, "abc")
    message = refused_at_load(clean_env, envs.SKIP_RUNTIME_CHECK, "sometimes")
    assert f"{envs.SUFFIX_TOKEN_COST}='abc'" in message
    assert f"{envs.SKIP_RUNTIME_CHECK}='sometimes'" in message


def test_good_values_are_accepted_with_their_documented_spellings() -> None:
    environ = {
        envs.ENABLED: "true",
        envs.SKIP_RUNTIME_CHECK: " OFF ",
        envs.SUFFIX_POLICY: "Cost",
        envs.SUFFIX_TOKEN_COST: "0",
        envs.SUFFIX_LONE_FACTOR: "2.5",
        envs.SUFFIX_RECOVER: "weight=0.3,skips=1+2",
        envs.SKIP_VERSION_CHECK: "",  # empty counts as unset
    }
    assert envs.validate_environment(environ=environ) == []
    assert envs.read(envs.SUFFIX_POLICY, environ) == "cost"
    assert envs.read(envs.SKIP_RUNTIME_CHECK, environ) is False
    assert envs.read(envs.SKIP_VERSION_CHECK, environ) is False
    policy = policy_from_env(environ)
    assert isinstance(policy, CostAwarePolicy)
    assert (policy.token_cost, policy.lone_spec_factor) == (0.0, 2.5)


def test_suffix_policy_reader_names_the_variable() -> None:
    """The cache reads the same table (vLLM builds it long after plugin load)."""
    with pytest.raises(ValueError, match=f"{envs.SUFFIX_TOKEN_COST}='abc' is not valid"):
        policy_from_env({envs.SUFFIX_POLICY: "cost", envs.SUFFIX_TOKEN_COST: "abc"})
    with pytest.raises(ValueError, match=f"{envs.SUFFIX_TOKEN_COST}='nan'"):
        policy_from_env({envs.SUFFIX_POLICY: "cost", envs.SUFFIX_TOKEN_COST: "nan"})
    with pytest.raises(ValueError, match=f"{envs.SUFFIX_RECOVER}='max_tail=x'"):
        SlipRecovery.from_env({envs.SUFFIX_RECOVER: "max_tail=x"})


def test_table_defaults_are_the_policys_own() -> None:
    """The env defaults in the table and the README are what CostAwarePolicy uses."""
    policy = CostAwarePolicy()
    assert envs.setting(envs.SUFFIX_TOKEN_COST).default == policy.token_cost
    assert envs.setting(envs.SUFFIX_LONE_FACTOR).default == policy.lone_spec_factor
    assert policy_from_env({}) is None  # the table's default policy is "off"


def test_unknown_arctic_variables_are_reported_with_a_did_you_mean() -> None:
    lines = envs.validate_environment(
        [FP32_LM_HEAD],
        environ={
            "ARCTIC_INFERENCE_SUFIX_POLICY": "cost",
            "ARCTIC_FP32_LMHEAD": "1",
            "ARCTIC_INFERENCE_ZZZ": "1",
            "ARCTIC_TEST_MODELS": "/opt/models",  # not ours, not close to ours: left alone
        },
    )
    assert lines == [
        "ARCTIC_FP32_LMHEAD is set but Arctic Inference does not read it; did you mean ARCTIC_FP32_LM_HEAD?",
        "ARCTIC_INFERENCE_SUFIX_POLICY is set but Arctic Inference does not read it; "
        "did you mean ARCTIC_INFERENCE_SUFFIX_POLICY?",
        "ARCTIC_INFERENCE_ZZZ is set but Arctic Inference does not read it",
    ]


def test_near_miss_of_the_enable_switch_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(envs.ENABLED, raising=False)
    monkeypatch.setenv("ARCTIC_INFERENCE_ENABLE", "1")
    monkeypatch.setattr(plugin, "_near_miss_warned", False)
    with caplog.at_level("WARNING", logger="vllm.arctic_inference.vllm.plugin"):
        assert plugin.load_plugin() is False
    assert (
        "ARCTIC_INFERENCE_ENABLE is set but Arctic Inference does not read it; "
        "did you mean ARCTIC_INFERENCE_ENABLED?" in caplog.text
    )


def test_readme_env_table_is_the_settings_table() -> None:
    assert envs.markdown_table() in README.read_text(encoding="utf-8")


# --- ArcticArg conversion: types, ranges, choices ---------------------------------

RATIO = ArcticArg(name="arctic_ratio", type=float, default=0.5, help="x", minimum=0.0, maximum=1.0)
COUNT = ArcticArg(name="arctic_count", type=int, default=1, help="x", minimum=1)


@pytest.mark.parametrize(
    ("arg", "value", "message"),
    [
        (RATIO, "abc", "src='abc' is not valid: expected a finite number >= 0.0 and <= 1.0."),
        (RATIO, math.nan, "src=nan is not valid"),
        (RATIO, "inf", "src='inf' is not valid"),
        (RATIO, 1.5, "src=1.5 is out of range: expected a finite number >= 0.0 and <= 1.0."),
        (RATIO, True, "src=True is not valid"),
        (COUNT, 2.5, "src=2.5 is not valid: expected an integer >= 1."),
        (COUNT, 0, "src=0 is out of range: expected an integer >= 1."),
        (COUNT, "1e3", "src='1e3' is not valid"),
        (COUNT, [1], "src=[1] is not valid"),
        (FP32_LM_HEAD, 2, "src=2 is not a boolean"),
        (FP32_LM_HEAD, None, "src=None is not a boolean"),
    ],
)
def test_convert_refuses_with_source_value_and_valid_range(
    arg: ArcticArg, value: object, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        arg.convert(value, source="src")


def test_convert_accepts_in_range_values() -> None:
    assert RATIO.convert("0", source="s") == 0.0 and RATIO.convert(1, source="s") == 1.0
    assert COUNT.convert(" 7 ", source="s") == 7 and COUNT.convert(3.0, source="s") == 3
    assert FP32_LM_HEAD.convert(1, source="s") is True


def test_a_default_outside_the_range_is_a_definition_error() -> None:
    with pytest.raises(ValueError, match="default of arctic_bad=-1 is out of range"):
        ArcticArg(name="arctic_bad", type=int, default=-1, help="x", minimum=0)
    with pytest.raises(TypeError, match="only int and float args take a range"):
        ArcticArg(name="arctic_bad", type=str, default="a", help="x", minimum=0)


# --- additional_config["arctic"] ---------------------------------------------------


@pytest.mark.parametrize("section", [None, [], 0, "fp32_lm_head", [("fp32_lm_head", True)]])
def test_arctic_section_that_is_not_a_mapping_is_refused(section: object) -> None:
    with pytest.raises(ValueError, match=r'additional_config\["arctic"\] must be a mapping'):
        arctic_section({"arctic": section})


@pytest.mark.parametrize("key", ["artic", "Arctic", "arctc", "arctic_", " arctic"])
def test_top_level_key_close_to_arctic_gets_a_did_you_mean(key: str) -> None:
    with pytest.raises(ValueError, match=f'top-level key {key!r}; did you mean "arctic"'):
        arctic_section({key: {"fp32_lm_head": True}})


def test_other_top_level_keys_are_left_to_their_owners() -> None:
    assert arctic_section({"gdn_prefill_backend": "x", "attention": {}}) == {}
    assert arctic_section(None) == {} and arctic_section({}) == {}


def test_non_mapping_additional_config_is_refused_where_values_are_read() -> None:
    """A real VllmConfig may hold an object with compute_hash() instead of a dict
    (vLLM allows it); Arctic values cannot live there, and reading one says so."""
    from vllm.config import DeviceConfig, VllmConfig

    class HashOnly:
        def compute_hash(self) -> str:
            return "h"

    config = VllmConfig(device_config=DeviceConfig(device="cpu"), additional_config=HashOnly())
    with pytest.raises(ValueError, match="additional_config must be a JSON object .* got HashOnly"):
        PER_SEQ_MAX_TOKENS.value_for(config)
