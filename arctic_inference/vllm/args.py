"""Arctic engine arguments: one registration, every entry path.

A feature declares its knobs as :class:`ArcticArg` values (usually in its
``patch_set`` entry; :func:`register_arctic_arg` does the registering).
The EngineArgs patch (:mod:`arctic_inference.vllm.args_patch`) then makes each
knob reachable from every way vLLM is started:

========================  =====================================================
entry path                how the value gets in
========================  =====================================================
``vllm serve --flag``     ``EngineArgs.add_cli_args`` gains an "Arctic
                          Inference" group (so ``vllm serve --help`` lists it);
                          ``EngineArgs.from_cli_args`` copies parsed values.
``LLM(...)`` / Python     ``LLM`` builds ``EngineArgs`` *before* plugins load,
                          so Arctic keywords cannot be constructor arguments.
                          Pass ``additional_config={"arctic": {"name": v}}``
                          (a stock vLLM field) or set the arg's env variable;
                          missing values are backfilled with their defaults.
``--additional-config``   the same ``{"arctic": {...}}`` JSON works on the CLI.
========================  =====================================================

Precedence, highest first: CLI flag or attribute set on the ``EngineArgs``
instance, ``additional_config["arctic"]``, the arg's env variable, its default.

Where values land: ``EngineArgs.create_engine_config`` resolves every
registered arg and stores the complete dict in
``VllmConfig.additional_config["arctic"]``. The config object is what vLLM
ships to the engine-core and worker processes, so every process reads the same
values through :func:`arctic_values` (which falls back to env/defaults for a
config that was not built through ``EngineArgs``). The values are also mirrored
into their env variables in the process that built the config, before any
engine process is started, for code that runs where no config is at hand.
Because ``additional_config`` is part of vLLM's config hash, an Arctic value
that changes the compiled graph also gets its own compile cache.

Validation: every value, from whichever source, goes through
:meth:`ArcticArg.convert`, which checks its type, choices, range and (for
floats) finiteness and names the source, the value and what is valid.
``additional_config`` itself is checked by :func:`arctic_section`: the
``"arctic"`` entry, when present, must be a mapping of registered names, and a
top-level key that looks like a misspelt ``"arctic"`` is refused with a
did-you-mean. The plugin's env-only settings (``arctic_inference.envs``) are
``ArcticArg`` values too, so one mechanism validates every knob.
"""

from __future__ import annotations

import dataclasses
import difflib
import keyword
import math
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from arctic_inference.utils import parse_bool

ADDITIONAL_CONFIG_KEY = "arctic"
_SCALAR_TYPES = (bool, int, float, str)


@dataclasses.dataclass(frozen=True)
class ArcticArg:
    """One Arctic setting: an engine argument, or an env-only plugin setting.

    ``name`` is the Python identifier (``fp32_lm_head``); the CLI flag is
    derived from it (``--fp32-lm-head``). ``env`` names an environment variable
    that supplies a value when none is given explicitly and to which the final
    value is mirrored for worker processes. ``minimum``/``maximum`` bound a
    number (inclusive); ``choices`` of a str arg are matched ignoring case and
    surrounding spaces. ``check`` validates what the type cannot express: it
    gets the converted value and raises ``ValueError`` with the reason.
    """

    name: str
    type: type
    default: Any
    help: str
    env: str | None = None
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    check: Callable[[Any], None] | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or keyword.iskeyword(self.name):
            raise ValueError(f"ArcticArg name {self.name!r} must be a Python identifier.")
        if self.type not in _SCALAR_TYPES:
            raise TypeError(
                f"ArcticArg {self.name!r}: type must be one of bool, int, float, str; "
                f"got {self.type!r}."
            )
        if (self.minimum is not None or self.maximum is not None) and self.type not in (int, float):
            raise TypeError(f"ArcticArg {self.name!r}: only int and float args take a range.")
        if self.default is not None:
            # ``check`` may import what the arg configures: not at definition time.
            default = self.convert(self.default, source=f"default of {self.name}", run_check=False)
            object.__setattr__(self, "default", default)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def valid_values(self) -> str:
        """What this arg accepts, in words (for errors, ``--help`` and the README)."""
        if self.type is bool:
            return "a boolean: 1/true/yes/on or 0/false/no/off"
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        kind = {int: "an integer", float: "a finite number", str: "a string"}[self.type]
        bounds = []
        if self.minimum is not None:
            bounds.append(f">= {self.minimum}")
        if self.maximum is not None:
            bounds.append(f"<= {self.maximum}")
        return kind + (" " + " and ".join(bounds) if bounds else "")

    def convert(self, value: Any, *, source: str, run_check: bool = True) -> Any:
        """Coerce ``value`` to this arg's type and check it.

        ``source`` names where the value came from as the user wrote it (the
        env variable, the flag, the ``additional_config`` path); errors read
        ``SOURCE=VALUE is ...: expected WHAT IS VALID``.
        """
        given = f"{source}={value!r}"
        if self.type is bool:
            if isinstance(value, bool):
                result: Any = value
            elif isinstance(value, str):
                result = parse_bool(value, source=source)
            elif isinstance(value, int) and value in (0, 1):
                result = bool(value)
            else:
                raise ValueError(f"{given} is not a boolean. Use true/false (or 1/0).")
        else:
            result = self._convert_scalar(value, given)
        if self.choices is not None:
            result = self._match_choice(result, given)
        if self.type in (int, float):
            too_low = self.minimum is not None and result < self.minimum
            too_high = self.maximum is not None and result > self.maximum
            if too_low or too_high:
                raise ValueError(f"{given} is out of range: expected {self.valid_values()}.")
        if self.check is not None and run_check:
            try:
                self.check(result)
            except ValueError as err:
                raise ValueError(f"{given} is not valid: {err}.") from None
        return result

    def _convert_scalar(self, value: Any, given: str) -> Any:
        wrong = ValueError(f"{given} is not valid: expected {self.valid_values()}.")
        if isinstance(value, bool):
            raise wrong  # True is an int to Python, never a number to a user
        if self.type is str:
            if not isinstance(value, str):
                raise wrong
            return value
        if self.type is int:
            if isinstance(value, float) and value.is_integer():
                return int(value)
            if not isinstance(value, (int, str)):
                raise wrong
        elif not isinstance(value, (int, float, str)):
            raise wrong
        try:
            result = self.type(value.strip() if isinstance(value, str) else value)
        except (TypeError, ValueError, OverflowError):
            raise wrong from None
        if self.type is float and not math.isfinite(result):
            raise wrong
        return result

    def _match_choice(self, value: Any, given: str) -> Any:
        for choice in self.choices or ():
            if isinstance(value, str) and isinstance(choice, str):
                if value.strip().casefold() == choice.casefold():
                    return choice
            elif value == choice:
                return choice
        raise ValueError(f"{given} is not one of {list(self.choices or ())}.")

    def env_value(self, environ: Mapping[str, str] | None = None) -> Any | None:
        """The value from the env variable, or None when it is unset or empty."""
        env = os.environ if environ is None else environ
        if self.env is None or not env.get(self.env, "").strip():
            return None
        return self.convert(env[self.env], source=self.env)

    def from_env(self, environ: Mapping[str, str] | None = None) -> Any:
        """The env variable's value, or the default when it is unset."""
        value = self.env_value(environ)
        return self.default if value is None else value

    def resolve(self, explicit: Any, section: Mapping[str, Any]) -> Any:
        """This arg's value by the documented precedence: an explicit value, then the
        ``additional_config["arctic"]`` section, then the env variable, then the default."""
        if explicit is not None:
            return self.convert(explicit, source=f"EngineArgs.{self.name}")
        if section.get(self.name) is not None:
            return self.convert(
                section[self.name],
                source=f'additional_config["{ADDITIONAL_CONFIG_KEY}"]["{self.name}"]',
            )
        return self.from_env()

    def value_for(self, vllm_config: Any | None) -> Any:
        """This arg's value for a built config, without needing the registry (so usable
        where the plugin has not registered its args, e.g. a patched method in a test)."""
        additional = getattr(vllm_config, "additional_config", None)
        return self.resolve(None, _section_of(additional))

    def to_env(self, value: Any) -> str:
        if self.type is bool:
            return "1" if value else "0"
        return str(value)


_lock = threading.RLock()
_args: dict[str, ArcticArg] = {}


def register_arctic_arg(arg: ArcticArg) -> ArcticArg:
    """Register ``arg``; registering the same definition again is a no-op."""
    with _lock:
        known = _args.get(arg.name)
        if known is not None:
            if known != arg:
                raise ValueError(
                    f"Arctic arg {arg.name!r} is already registered with a different "
                    f"definition ({known}); give the new arg another name."
                )
            return known
        clash = _engine_args_field_names()
        if arg.name in clash:
            raise ValueError(
                f"Arctic arg {arg.name!r} clashes with vLLM's EngineArgs.{arg.name}; "
                "choose a name vLLM does not use."
            )
        _args[arg.name] = arg
        return arg


def unregister_arctic_arg(name: str) -> None:
    """Remove a registered arg (tests register throwaway args)."""
    with _lock:
        _args.pop(name, None)


def registered_args() -> tuple[ArcticArg, ...]:
    """All registered args, in registration order."""
    with _lock:
        return tuple(_args.values())


def get_arctic_arg(name: str) -> ArcticArg:
    with _lock:
        try:
            return _args[name]
        except KeyError:
            known = ", ".join(_args) or "none"
            raise KeyError(
                f"No Arctic arg named {name!r} is registered (registered: {known})."
            ) from None


def _engine_args_field_names() -> frozenset[str]:
    # Only checked when vLLM is already imported: registering must not import it.
    module = sys.modules.get("vllm.engine.arg_utils")
    if module is None:
        return frozenset()
    return frozenset(f.name for f in dataclasses.fields(module.EngineArgs))


def _section_of(additional_config: Any) -> Mapping[str, Any]:
    """The ``"arctic"`` entry of ``additional_config`` checked for shape only."""
    if additional_config is None:
        return {}
    if not isinstance(additional_config, Mapping):
        raise ValueError(
            "additional_config must be a JSON object (a dict) when the Arctic "
            "Inference plugin is on, got "
            f"{type(additional_config).__name__} {additional_config!r}."
        )
    for key in additional_config:
        if isinstance(key, str) and key != ADDITIONAL_CONFIG_KEY and _looks_like_arctic(key):
            raise ValueError(
                f"additional_config has a top-level key {key!r}; did you mean "
                f'"{ADDITIONAL_CONFIG_KEY}"? Arctic options go in '
                f'additional_config["{ADDITIONAL_CONFIG_KEY}"].'
            )
    if ADDITIONAL_CONFIG_KEY not in additional_config:
        return {}
    section = additional_config[ADDITIONAL_CONFIG_KEY]
    if not isinstance(section, Mapping):
        raise ValueError(
            f'additional_config["{ADDITIONAL_CONFIG_KEY}"] must be a mapping of Arctic '
            f"arg names to values, got {type(section).__name__} {section!r}; "
            f'e.g. {{"{ADDITIONAL_CONFIG_KEY}": {{"fp32_lm_head": true}}}}.'
        )
    return section


def _looks_like_arctic(key: str) -> bool:
    return bool(
        difflib.get_close_matches(key.strip().casefold(), [ADDITIONAL_CONFIG_KEY], cutoff=0.75)
    )


def arctic_section(additional_config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``"arctic"`` mapping inside ``additional_config``, validated: it must be
    a mapping (when present) whose keys are all registered Arctic args."""
    section = _section_of(additional_config)
    names = [a.name for a in registered_args()]
    unknown = sorted(str(key) for key in section if key not in names)
    if unknown:
        known = ", ".join(names) or "none"
        hints = [
            f"{key!r} -> {match[0]!r}"
            for key in unknown
            if (match := difflib.get_close_matches(key, names, n=1))
        ]
        hint = f" Did you mean: {', '.join(hints)}?" if hints else ""
        raise ValueError(
            f'additional_config["{ADDITIONAL_CONFIG_KEY}"] has unknown key(s) '
            f"{', '.join(unknown)}; registered Arctic args: {known}.{hint}"
        )
    return dict(section)


def resolve_values(
    explicit: Mapping[str, Any], additional_config: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Final value of every registered arg, by the documented precedence."""
    section = arctic_section(additional_config)
    values: dict[str, Any] = {}
    for arg in registered_args():
        values[arg.name] = arg.resolve(explicit.get(arg.name), section)
    return values


def mirror_to_env(values: Mapping[str, Any]) -> None:
    """Export values into their env variables so child processes inherit them."""
    for arg in registered_args():
        if arg.env is not None and arg.name in values and values[arg.name] is not None:
            os.environ[arg.env] = arg.to_env(values[arg.name])


def arctic_values(vllm_config: Any | None) -> dict[str, Any]:
    """Arctic values as seen by any process holding a ``VllmConfig``."""
    additional = getattr(vllm_config, "additional_config", None) if vllm_config else None
    return resolve_values({}, additional)


def arctic_value(vllm_config: Any | None, name: str) -> Any:
    """One Arctic value; raises a clear KeyError for an unregistered name."""
    get_arctic_arg(name)
    return arctic_values(vllm_config)[name]
