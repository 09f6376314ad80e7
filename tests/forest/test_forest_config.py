"""The --forest-cascade-attn-configs knob: every entry path, and bad input."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from forest_env import cpu_config

from arctic_inference.vllm.attention.forest_config import (
    FOREST_CASCADE_ATTN_CONFIGS,
    ForestConfig,
    forest_config_for,
    parse_forest_config,
)


def test_defaults_are_the_documented_ones():
    assert parse_forest_config("{}") == ForestConfig(
        max_query_len=16,
        min_group_size=2,
        min_additional_prefix_blocks=1,
        min_non_singleton_fraction=0.25,
        max_non_singleton_groups=256,
    )


def test_absent_or_empty_text_means_off():
    assert parse_forest_config(None) is None
    assert parse_forest_config("  ") is None
    assert forest_config_for(cpu_config()) is None


def test_unknown_key_names_the_key_and_the_known_ones():
    with pytest.raises(ValueError) as err:
        parse_forest_config('{"min_group": 3}')
    text = str(err.value)
    assert "'min_group'" in text
    for key in (
        "max_query_len",
        "min_group_size",
        "min_additional_prefix_blocks",
        "min_non_singleton_fraction",
        "max_non_singleton_groups",
    ):
        assert key in text


@pytest.mark.parametrize(
    "raw, words",
    [
        ("{min_group_size: 2}", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"min_group_size": 1}', "min_group_size must be an integer >= 2"),
        ('{"max_query_len": 0}', "max_query_len must be an integer >= 1"),
        ('{"max_query_len": true}', "max_query_len must be an integer >= 1"),
        (
            '{"min_non_singleton_fraction": 1.5}',
            "min_non_singleton_fraction must be a number in [0, 1]",
        ),
    ],
)
def test_bad_values_are_clear_errors(raw, words):
    with pytest.raises(ValueError, match=None) as err:
        parse_forest_config(raw)
    assert words in str(err.value)


def test_additional_config_dict_env_and_precedence(monkeypatch):
    on = cpu_config(forest_cascade_attn_configs='{"min_group_size": 4}')
    assert forest_config_for(on) == ForestConfig(min_group_size=4)
    monkeypatch.setenv(FOREST_CASCADE_ATTN_CONFIGS.env, '{"max_query_len": 4}')
    assert forest_config_for(cpu_config()) == ForestConfig(max_query_len=4)
    assert forest_config_for(on) == ForestConfig(min_group_size=4)  # the config wins


def test_bad_env_value_fails_with_the_variable_named(monkeypatch):
    monkeypatch.setenv(FOREST_CASCADE_ATTN_CONFIGS.env, '{"nope": 1}')
    with pytest.raises(ValueError) as err:
        forest_config_for(cpu_config())
    assert FOREST_CASCADE_ATTN_CONFIGS.env in str(err.value) and "'nope'" in str(err.value)


@pytest.fixture
def engine_args_patched() -> Iterator[None]:
    from arctic_inference.patching import reverting_new_patches
    from arctic_inference.vllm.args import register_arctic_arg, unregister_arctic_arg
    from arctic_inference.vllm.args_patch import EngineArgsPatch

    with reverting_new_patches():
        EngineArgsPatch.apply()
        register_arctic_arg(FOREST_CASCADE_ATTN_CONFIGS)
        try:
            yield
        finally:
            unregister_arctic_arg(FOREST_CASCADE_ATTN_CONFIGS.name)


def _cli(*argv: str) -> str:
    """The flag's value as the patched ``EngineArgs.from_cli_args`` lands it.

    (vLLM's own full parser needs a device platform, which this CPU box cannot infer;
    the Arctic group is the same one the patched ``add_cli_args`` adds.)
    """
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from arctic_inference.vllm.args_patch import add_arctic_cli_args

    namespace = add_arctic_cli_args(FlexibleArgumentParser()).parse_args(list(argv))
    arg = FOREST_CASCADE_ATTN_CONFIGS
    return arg.convert(getattr(namespace, arg.name), source=arg.flag)


def test_cli_flag_reaches_engine_args(engine_args_patched):
    value = _cli("--forest-cascade-attn-configs", '{"min_group_size": 3}')
    assert parse_forest_config(value) == ForestConfig(min_group_size=3)


def test_cli_flag_with_unknown_key_fails_at_parse_time(engine_args_patched, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _cli("--forest-cascade-attn-configs", '{"groups": 3}')
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--forest-cascade-attn-configs" in err and "'groups'" in err and "min_group_size" in err
    assert "Traceback" not in err


def test_engine_config_refuses_a_bad_additional_config(engine_args_patched, tiny_llama_dir):
    from vllm.engine.arg_utils import EngineArgs

    from arctic_inference.vllm.args_patch import land_arctic_values

    good = EngineArgs(
        model=str(tiny_llama_dir),
        additional_config={"arctic": {"forest_cascade_attn_configs": '{"max_query_len": 8}'}},
    )
    values = land_arctic_values(good)
    assert parse_forest_config(values["forest_cascade_attn_configs"]) == ForestConfig(
        max_query_len=8
    )
    bad = EngineArgs(
        model=str(tiny_llama_dir),
        additional_config={"arctic": {"forest_cascade_attn_configs": '{"max_query_len": 8,'}},
    )
    with pytest.raises(ValueError, match="not valid JSON"):
        land_arctic_values(bad)
    as_dict = EngineArgs(
        model=str(tiny_llama_dir),
        additional_config={"arctic": {"forest_cascade_attn_configs": {"max_query_len": 8}}},
    )
    with pytest.raises(ValueError, match="expected a string"):
        land_arctic_values(as_dict)
