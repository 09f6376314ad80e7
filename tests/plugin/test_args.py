"""Arctic engine args on the real vLLM 0.26.0 ``EngineArgs`` (CLI and Python paths)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

from vllm.config import DeviceConfig, VllmConfig  # noqa: E402
from vllm.engine.arg_utils import AsyncEngineArgs, EngineArgs  # noqa: E402
from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: E402

from arctic_inference.patching import is_applied, reverting_new_patches  # noqa: E402
from arctic_inference.vllm.args import (  # noqa: E402
    ArcticArg,
    arctic_values,
    register_arctic_arg,
    registered_args,
    unregister_arctic_arg,
)
from arctic_inference.vllm.args_patch import (  # noqa: E402
    ARG_GROUP_TITLE,
    EngineArgsPatch,
    add_arctic_cli_args,
    land_arctic_values,
)

KNOB = ArcticArg(
    name="arctic_test_knob",
    type=int,
    default=3,
    help="Test-only integer knob.",
    env="ARCTIC_TEST_KNOB",
)
SWITCH = ArcticArg(
    name="arctic_test_switch",
    type=bool,
    default=False,
    help="Test-only boolean switch.",
    env="ARCTIC_TEST_SWITCH",
)


@pytest.fixture(scope="module")
def patched_engine_args() -> Iterator[None]:
    """The real EngineArgs patch for this module only; reverted afterwards."""
    with reverting_new_patches():
        EngineArgsPatch.apply()
        yield
    assert not is_applied(EngineArgsPatch)


@pytest.fixture
def test_args(patched_engine_args: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """EngineArgs patched, two throwaway args registered, their env vars clean."""
    for arg in (KNOB, SWITCH):
        monkeypatch.delenv(arg.env, raising=False)
        register_arctic_arg(arg)
    try:
        yield
    finally:
        for arg in (KNOB, SWITCH):
            unregister_arctic_arg(arg.name)
            os.environ.pop(arg.env, None)


def pick(values: dict) -> dict:
    """Only this module's args (feature modules may have registered more)."""
    return {k: v for k, v in values.items() if k in (KNOB.name, SWITCH.name)}


def parse(argv: list[str], cls: type = EngineArgs) -> object:
    """Parse with the Arctic group plus --model only.

    vLLM's full ``add_cli_args`` needs a platform (it builds a default
    VllmConfig); on this GPU-less machine that path runs in the subprocess
    tests (test_plugin_load.py), which select vLLM's CPU platform first.
    """
    parser = FlexibleArgumentParser()
    parser.add_argument("--model")
    add_arctic_cli_args(parser)
    return cls.from_cli_args(parser.parse_args(argv))


def test_patch_is_bound_on_the_real_engine_args(patched_engine_args: None) -> None:
    record = EngineArgsPatch.apply()
    assert record.target == "vllm.engine.arg_utils.EngineArgs"
    for name in ("add_cli_args", "from_cli_args", "create_engine_config"):
        assert EngineArgs.__dict__[name] is EngineArgsPatch.__dict__[name]
    assert isinstance(EngineArgs.__dict__["add_cli_args"], staticmethod)
    assert isinstance(EngineArgs.__dict__["from_cli_args"], classmethod)


def test_cli_values_reach_engine_args(test_args: None) -> None:
    engine_args = parse(["--model", "m", "--arctic-test-knob", "5", "--arctic-test-switch"])
    assert type(engine_args) is EngineArgs
    assert engine_args.arctic_test_knob == 5
    assert engine_args.arctic_test_switch is True
    # The async subclass (what `vllm serve` uses) keeps its own class.
    async_args = parse(["--model", "m", "--no-arctic-test-switch"], AsyncEngineArgs)
    assert type(async_args) is AsyncEngineArgs
    assert async_args.arctic_test_switch is False
    assert "arctic_test_knob" not in vars(async_args)  # not given: left to env/default
    assert async_args.arctic_test_knob == 3


def test_arctic_group_is_added_once_and_found_by_help_search(
    test_args: None, capsys: pytest.CaptureFixture
) -> None:
    parser = FlexibleArgumentParser()
    add_arctic_cli_args(parser)
    add_arctic_cli_args(parser)  # a second call must not add duplicates
    assert [a.dest for a in parser._actions].count("arctic_test_knob") == 1
    assert ARG_GROUP_TITLE in parser.format_help()  # listed in the group summary
    try:
        with pytest.raises(SystemExit):
            parser.parse_args([f"--help={ARG_GROUP_TITLE}"])  # as in vllm serve
    finally:
        FlexibleArgumentParser._search_keyword = None  # vLLM stores it class-wide
    text = " ".join(capsys.readouterr().out.split())  # undo help line wrapping
    assert "--arctic-test-knob" in text and "Test-only integer knob." in text
    assert "env: ARCTIC_TEST_KNOB" in text
    assert "--arctic-test-switch, --no-arctic-test-switch" in text


def test_bad_cli_value_is_an_argparse_error(test_args: None, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        parse(["--model", "m", "--arctic-test-knob", "many"])
    assert "--arctic-test-knob" in capsys.readouterr().err


def test_out_of_range_cli_value_is_an_argparse_error_naming_the_range(
    patched_engine_args: None, capsys: pytest.CaptureFixture
) -> None:
    ratio = ArcticArg(
        name="arctic_test_ratio", type=float, default=0.5, help="x", minimum=0.0, maximum=1.0
    )
    register_arctic_arg(ratio)
    try:
        for text, problem in (
            ("nan", "is not valid"),
            ("1.5", "is out of range"),
            ("-0.1", "is out of range"),
        ):
            with pytest.raises(SystemExit):
                parse(
                    ["--model", "m", f"--arctic-test-ratio={text}"]
                )  # "-0.1" alone reads as a flag
            err = " ".join(capsys.readouterr().err.split())
            assert (
                f"--arctic-test-ratio={text!r} {problem}: expected a finite number >= 0.0 and <= 1.0."
                in err
            )
        assert parse(["--model", "m", "--arctic-test-ratio", "1"]).arctic_test_ratio == 1.0
    finally:
        unregister_arctic_arg(ratio.name)


def test_additional_config_object_without_a_dict_is_refused_before_vllm_builds(
    patched_engine_args: None,
) -> None:
    """vLLM also accepts an object with compute_hash() as additional_config; it
    has no room for Arctic values, so the plugin refuses it by name."""

    class Hashable:
        def compute_hash(self) -> str:
            return "h"

    engine_args = EngineArgs(model="m", additional_config=Hashable())
    with pytest.raises(ValueError, match="additional_config is a Hashable object.*needs a dict"):
        engine_args.create_engine_config()


def test_backfill_for_engine_args_built_before_the_plugin(
    test_args: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # LLM(...) builds EngineArgs before plugins load: no Arctic attributes.
    engine_args = EngineArgs(model="m")
    assert "arctic_test_knob" not in vars(engine_args)
    assert engine_args.arctic_test_knob == 3
    monkeypatch.setenv("ARCTIC_TEST_KNOB", "9")
    assert engine_args.arctic_test_knob == 9
    configured = EngineArgs(model="m", additional_config={"arctic": {"arctic_test_knob": 4}})
    assert configured.arctic_test_knob == 4  # additional_config beats env
    with pytest.raises(AttributeError, match="no_such_field"):
        engine_args.no_such_field  # noqa: B018


def test_values_land_in_additional_config_and_env(test_args: None) -> None:
    user_config = {"other": 1, "arctic": {"arctic_test_knob": "6"}}
    engine_args = EngineArgs(model="m", additional_config=user_config)
    engine_args.arctic_test_switch = True  # explicit attribute wins over everything
    values = land_arctic_values(engine_args)
    assert pick(values) == {"arctic_test_knob": 6, "arctic_test_switch": True}
    assert engine_args.additional_config == {"other": 1, "arctic": values}
    assert user_config["arctic"] == {"arctic_test_knob": "6"}, "caller's dict untouched"
    assert os.environ["ARCTIC_TEST_KNOB"] == "6"
    assert os.environ["ARCTIC_TEST_SWITCH"] == "1"
    assert engine_args.arctic_test_knob == 6


def cpu_config(additional_config: dict) -> VllmConfig:
    """A real VllmConfig (no model: vLLM builds one without) on the CPU device."""
    return VllmConfig(device_config=DeviceConfig(device="cpu"), additional_config=additional_config)


def test_worker_side_reads_values_from_a_config(test_args: None) -> None:
    config = cpu_config({"arctic": {"arctic_test_knob": 11, "arctic_test_switch": True}})
    assert pick(arctic_values(config)) == {
        "arctic_test_knob": 11,
        "arctic_test_switch": True,
    }
    assert pick(arctic_values(None)) == {"arctic_test_knob": 3, "arctic_test_switch": False}


def test_bad_values_name_their_source(test_args: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"unknown key\(s\) arctic_typo.*arctic_test_knob"):
        arctic_values(cpu_config({"arctic": {"arctic_typo": 1}}))
    monkeypatch.setenv("ARCTIC_TEST_SWITCH", "perhaps")
    with pytest.raises(ValueError, match="ARCTIC_TEST_SWITCH='perhaps' is not a boolean"):
        arctic_values(None)
    monkeypatch.delenv("ARCTIC_TEST_SWITCH")
    monkeypatch.setenv("ARCTIC_TEST_KNOB", "x")
    with pytest.raises(ValueError, match="ARCTIC_TEST_KNOB='x' is not valid: expected an integer"):
        arctic_values(None)


def test_registration_rules(test_args: None) -> None:
    assert register_arctic_arg(KNOB) is KNOB  # same definition again: no-op
    assert [a.name for a in registered_args()].count("arctic_test_knob") == 1
    with pytest.raises(ValueError, match="already registered"):
        register_arctic_arg(ArcticArg(name="arctic_test_knob", type=int, default=4, help="x"))
    with pytest.raises(ValueError, match="clashes with vLLM's EngineArgs.model"):
        register_arctic_arg(ArcticArg(name="model", type=str, default="", help="x"))
    with pytest.raises(TypeError, match="type must be one of"):
        ArcticArg(name="arctic_list", type=list, default=[], help="x")
    with pytest.raises(ValueError, match="Python identifier"):
        ArcticArg(name="bad-name", type=int, default=0, help="x")
    with pytest.raises(ValueError, match="not one of"):
        ArcticArg(name="arctic_mode", type=str, default="c", help="x", choices=("a", "b"))
