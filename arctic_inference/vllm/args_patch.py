"""The EngineArgs patch that carries Arctic args through vLLM (see ``args``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from vllm.engine.arg_utils import EngineArgs

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.args import (
    ADDITIONAL_CONFIG_KEY,
    ArcticArg,
    mirror_to_env,
    registered_args,
    resolve_values,
)

ARG_GROUP_TITLE = "ArcticInference"


def _add_arg(group: argparse._ArgumentGroup, arg: ArcticArg) -> None:
    # SUPPRESS keeps an absent flag out of the namespace, so env and
    # additional_config still apply and help shows only our own default text.
    ranged = arg.minimum is not None or arg.maximum is not None
    shown = (
        f"(default: {arg.default}"
        + (f"; valid: {arg.valid_values()}" if ranged else "")
        + (f"; env: {arg.env})" if arg.env else ")")
    )
    if arg.type is bool:
        group.add_argument(
            arg.flag,
            dest=arg.name,
            action=argparse.BooleanOptionalAction,
            default=argparse.SUPPRESS,
            help=f"{arg.help} {shown}",
        )
    else:
        group.add_argument(
            arg.flag,
            dest=arg.name,
            type=_cli_type(arg),
            choices=arg.choices,
            default=argparse.SUPPRESS,
            help=f"{arg.help} {shown}",
        )


def _cli_type(arg: ArcticArg) -> Callable[[str], Any]:
    """argparse ``type=`` for ``arg``: full validation, reported as a usage error."""

    def parse(text: str) -> Any:
        try:
            return arg.convert(text, source=arg.flag)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parse.__name__ = arg.type.__name__  # argparse names the type in some messages
    return parse


def group_description(args: list[ArcticArg]) -> str:
    """Group text; it names every flag because plain ``--help`` shows only this.

    vLLM's plain ``--help`` prints one line per group (title and description)
    and no flags; the flags and their help need ``--help=ArcticInference``.
    """
    return (
        "Options of the Arctic Inference plugin (ARCTIC_INFERENCE_ENABLED=1): "
        f"{', '.join(arg.flag for arg in args)}. Details: --help={ARG_GROUP_TITLE}."
    )


def add_arctic_cli_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add every registered Arctic arg to ``parser`` (once per parser)."""
    present = {action.dest for action in parser._actions}
    todo = [arg for arg in registered_args() if arg.name not in present]
    if todo:
        group = parser.add_argument_group(
            title=ARG_GROUP_TITLE, description=group_description(todo)
        )
        for arg in todo:
            _add_arg(group, arg)
    return parser


def land_arctic_values(engine_args: Any) -> dict[str, Any]:
    """Resolve every Arctic arg of ``engine_args`` and store the result.

    Sets each value as an attribute, replaces ``additional_config`` with a copy
    holding ``{"arctic": values}`` (the caller's dict is left untouched) and
    mirrors values into their env variables. Runs right before vLLM builds the
    ``VllmConfig``, i.e. before any engine process exists.
    """
    explicit = {a.name: engine_args.__dict__.get(a.name) for a in registered_args()}
    values = resolve_values(explicit, engine_args.additional_config)
    if values:
        for name, value in values.items():
            setattr(engine_args, name, value)
        engine_args.additional_config = {
            **(engine_args.additional_config or {}),
            ADDITIONAL_CONFIG_KEY: values,
        }
        mirror_to_env(values)
    return values


class EngineArgsPatch(ArcticPatch[EngineArgs]):
    """CLI flags, CLI parsing, attribute backfill and config landing for Arctic args."""

    _orig_add_cli_args = EngineArgs.add_cli_args  # staticmethod: plain function
    _orig_from_cli_args = EngineArgs.from_cli_args.__func__  # unbound classmethod
    _orig_create_engine_config = EngineArgs.create_engine_config

    @staticmethod
    def add_cli_args(parser: Any) -> Any:
        parser = EngineArgsPatch._orig_add_cli_args(parser)
        return add_arctic_cli_args(parser)

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> Any:
        engine_args = EngineArgsPatch._orig_from_cli_args(cls, args)
        for arg in registered_args():
            value = getattr(args, arg.name, None)
            if value is not None:
                setattr(engine_args, arg.name, arg.convert(value, source=arg.flag))
        return engine_args

    def __getattr__(self, name: str) -> Any:
        # Backfill: instances built before the plugin loaded (LLM(...) does
        # that) answer registered Arctic names with their resolved value.
        for arg in registered_args():
            if arg.name == name:
                additional = self.__dict__.get("additional_config")
                return resolve_values({}, additional)[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def create_engine_config(self, *args: Any, **kwargs: Any) -> Any:
        additional = self.additional_config
        if additional is not None and not isinstance(additional, Mapping):
            # Not a dict (e.g. --additional-config '{bad json' arrives as a
            # str): vLLM's own VllmConfig validation rejects it, with the error
            # stock vLLM gives; whatever vLLM would accept but holds no Arctic
            # section (a SupportsHash object) is refused here by name.
            if hasattr(additional, "compute_hash"):
                raise ValueError(
                    "additional_config is a "
                    f"{type(additional).__name__} object, but the Arctic Inference "
                    "plugin keeps its options in additional_config and needs a dict "
                    '(e.g. {"arctic": {...}}); pass a dict or unset '
                    "ARCTIC_INFERENCE_ENABLED."
                )
            return EngineArgsPatch._orig_create_engine_config(self, *args, **kwargs)
        land_arctic_values(self)
        return EngineArgsPatch._orig_create_engine_config(self, *args, **kwargs)
