"""The environment variables that steer Arctic Inference: one table, checked at load.

Each variable is an :class:`~arctic_inference.vllm.args.ArcticArg` (the same
type that declares the engine options), so it has one place for its type,
valid range, default and doc. :func:`validate_environment` parses every one of
them (and the env variables of registered engine options) when the plugin
loads, so a bad value stops start-up with an error naming the variable, the
value and what is valid, instead of failing later or being ignored.

Values are read on every call (never cached) because vLLM starts engine-core
and worker processes that inherit the environment at spawn time; reading
lazily means a process always sees what its parent exported. An empty value
counts as unset.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from typing import Any

from arctic_inference.vllm.args import ArcticArg

ENV_PREFIX = "ARCTIC_"
PLUGIN_PREFIX = "ARCTIC_INFERENCE_"

ENABLED = "ARCTIC_INFERENCE_ENABLED"
SKIP_PLATFORM_CHECK = "ARCTIC_INFERENCE_SKIP_PLATFORM_CHECK"
SKIP_VERSION_CHECK = "ARCTIC_INFERENCE_SKIP_VERSION_CHECK"
SKIP_RUNTIME_CHECK = "ARCTIC_INFERENCE_SKIP_RUNTIME_CHECK"
SUFFIX_POLICY = "ARCTIC_INFERENCE_SUFFIX_POLICY"
SUFFIX_BACKOFF = "ARCTIC_INFERENCE_SUFFIX_BACKOFF"
SUFFIX_TOKEN_COST = "ARCTIC_INFERENCE_SUFFIX_TOKEN_COST"
SUFFIX_LONE_FACTOR = "ARCTIC_INFERENCE_SUFFIX_LONE_FACTOR"
SUFFIX_RECOVER = "ARCTIC_INFERENCE_SUFFIX_RECOVER"
SKIP_SPEC_MODEL_CHECK = "ARCTIC_INFERENCE_SKIP_SPEC_MODEL_CHECK"

# Draft policies of the suffix cache (arctic_inference.suffix_decoding.policy).
SUFFIX_POLICIES = ("cost", "legacy", "off", "nodraft")


def _check_recover(text: str) -> None:
    # The settings' syntax and ranges live with SlipRecovery; it is imported
    # only when the variable is set, i.e. when suffix decoding is wanted.
    from arctic_inference.suffix_decoding.cache import SlipRecovery

    try:
        SlipRecovery.parse(text)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"{err}; use 0, 1 or key=value pairs of weight, max_tail, anchor_len, "
            "min_anchor, skips (e.g. weight=0.5,skips=1+2)"
        ) from None


def _switch(name: str, env: str, help: str) -> ArcticArg:
    return ArcticArg(name=name, type=bool, default=False, env=env, help=help)


SETTINGS: tuple[ArcticArg, ...] = (
    _switch("enabled", ENABLED, "`1` turns the plugin on; otherwise vLLM runs unmodified."),
    _switch(
        "skip_platform_check",
        SKIP_PLATFORM_CHECK,
        "`1` loads on a platform other than NVIDIA CUDA (unsupported; used by the CPU tests).",
    ),
    _switch(
        "skip_version_check",
        SKIP_VERSION_CHECK,
        "`1` patches a vLLM other than 0.26.0 (at your own risk); otherwise a "
        "mismatch stops start-up with the fix.",
    ),
    _switch(
        "skip_runtime_check",
        SKIP_RUNTIME_CHECK,
        '`1` turns the "vLLM built an unpatched class" error into a warning.',
    ),
    ArcticArg(
        name="suffix_policy",
        type=str,
        default="off",
        env=SUFFIX_POLICY,
        choices=SUFFIX_POLICIES,
        help="Draft policy of suffix decoding (see Suffix decoding below).",
    ),
    ArcticArg(
        name="suffix_backoff",
        type=bool,
        default=True,
        env=SUFFIX_BACKOFF,
        help="`0` is an older spelling of the policy `off`.",
    ),
    ArcticArg(
        name="suffix_token_cost",
        type=float,
        default=0.01,
        env=SUFFIX_TOKEN_COST,
        minimum=0.0,
        help="The `cost` policy's verification cost of one draft token in a busy batch.",
    ),
    ArcticArg(
        name="suffix_lone_factor",
        type=float,
        default=4.0,
        env=SUFFIX_LONE_FACTOR,
        minimum=0.0,
        help="The `cost` policy's draft length factor (times the match length) below a busy batch.",
    ),
    ArcticArg(
        name="suffix_recover",
        type=str,
        default="0",
        env=SUFFIX_RECOVER,
        check=_check_recover,
        help="Slip recovery of suffix decoding: `0` off, `1` on, or "
        "`key=value` overrides (`weight=0.5,skips=1+2`).",
    ),
    _switch(
        "skip_spec_model_check",
        SKIP_SPEC_MODEL_CHECK,
        "`1` serves an Arctic speculator whose `base_model_archs` does not name the "
        "target's architecture (otherwise start-up stops with the mismatch).",
    ),
)

_BY_ENV: dict[str, ArcticArg] = {s.env: s for s in SETTINGS if s.env is not None}


def setting(env: str) -> ArcticArg:
    """The table entry of one variable."""
    return _BY_ENV[env]


def read(env: str, environ: Mapping[str, str] | None = None) -> Any:
    """The validated value of one variable (its default when unset)."""
    return _BY_ENV[env].from_env(environ)


def enabled() -> bool:
    """Whether the operator turned the plugin on."""
    return bool(read(ENABLED))


def skip_platform_check() -> bool:
    return bool(read(SKIP_PLATFORM_CHECK))


def skip_version_check() -> bool:
    return bool(read(SKIP_VERSION_CHECK))


def skip_runtime_check() -> bool:
    return bool(read(SKIP_RUNTIME_CHECK))


def skip_spec_model_check() -> bool:
    return bool(read(SKIP_SPEC_MODEL_CHECK))


def validate_environment(
    extra: Iterable[ArcticArg] = (), environ: Mapping[str, str] | None = None
) -> list[str]:
    """Parse every known variable now; raise one ``ValueError`` listing each bad one.

    ``extra`` adds the registered engine options (their env variables are
    known too). Returns a warning line for each set ``ARCTIC_INFERENCE_*``
    variable that nothing reads, and for each other ``ARCTIC_*`` one close to a
    known name, with a did-you-mean when one is close.
    """
    env = os.environ if environ is None else environ
    known = list(SETTINGS) + [a for a in extra if a.env is not None]
    errors: list[str] = []
    for arg in known:
        try:
            arg.env_value(env)
        except ValueError as err:
            errors.append(str(err))
    if errors:
        raise ValueError("Invalid Arctic Inference environment: " + " | ".join(errors))
    names = sorted({a.env for a in known if a.env is not None})
    return [
        unknown_variable_message(name, names)
        for name in sorted(env)
        if name.startswith(ENV_PREFIX) and name not in names and _ours(name, names)
    ]


def _ours(name: str, known: list[str]) -> bool:
    # The plugin's own prefix, or close to a known name; other ARCTIC_*
    # variables (test model paths, a dev venv) belong to someone else.
    return name.startswith(PLUGIN_PREFIX) or bool(
        difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    )


def unknown_variable_message(name: str, known: list[str]) -> str:
    match = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    hint = f"; did you mean {match[0]}?" if match else ""
    return f"{name} is set but Arctic Inference does not read it{hint}"


def markdown_table(args: Iterable[ArcticArg] = SETTINGS) -> str:
    """The README's table of environment variables, rendered from the settings."""
    rows = ["| Variable | Default | Valid values | Meaning |", "|---|---|---|---|"]
    for arg in args:
        default = arg.to_env(arg.default) if arg.default is not None else "unset"
        if arg.type is bool:
            valid = "boolean"
        elif arg.type is str and arg.choices is None:
            valid = "see meaning"
        else:
            valid = arg.valid_values()
        rows.append(f"| `{arg.env}` | `{default}` | {valid} | {arg.help} |")
    return "\n".join(rows)
