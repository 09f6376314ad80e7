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
"""

from __future__ import annotations

import dataclasses
import json
import keyword
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
    """One Arctic engine argument.

    ``name`` is the Python identifier (``fp32_lm_head``); the CLI flag is
    derived from it (``--fp32-lm-head``). ``env`` names an environment variable
    that supplies a value when none is given explicitly and to which the final
    value is mirrored for worker processes.
    """

    name: str
    type: type
    default: Any
    help: str
    env: str | None = None
    choices: tuple[Any, ...] | None = None
    # Optional check of a converted value (raises ValueError naming the problem);
    # runs wherever a value enters, so bad input fails where the config is built.
    validate: Callable[[Any], None] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or keyword.iskeyword(self.name):
            raise ValueError(f"ArcticArg name {self.name!r} must be a Python identifier.")
        if self.type not in _SCALAR_TYPES:
            raise TypeError(
                f"ArcticArg {self.name!r}: type must be one of bool, int, float, str; "
                f"got {self.type!r}."
            )
        if self.default is not None:
            object.__setattr__(self, "default", self.convert(self.default, source="default"))

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def convert(self, value: Any, *, source: str) -> Any:
        """Coerce ``value`` to this arg's type; errors say where it came from."""
        where = f"{source} for Arctic arg {self.name!r}"
        if self.type is bool:
            if isinstance(value, bool):
                result: Any = value
            elif isinstance(value, str):
                result = parse_bool(value, source=where)
            elif isinstance(value, int) and value in (0, 1):
                result = bool(value)
            else:
                raise ValueError(f"{where}: expected a boolean, got {value!r}.")
        elif self.type is str and isinstance(value, (Mapping, list)):
            # A structured value (a JSON-valued knob given as a dict from Python).
            result = json.dumps(value)
        else:
            try:
                result = self.type(value)
            except (TypeError, ValueError):
                raise ValueError(
                    f"{where}: expected {self.type.__name__}, got {value!r}."
                ) from None
        if self.choices is not None and result not in self.choices:
            raise ValueError(f"{where}: {result!r} is not one of {list(self.choices)}.")
        if self.validate is not None:
            try:
                self.validate(result)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
        return result

    def env_value(self) -> Any | None:
        """The value from the env variable, or None when it is unset."""
        if self.env is None or self.env not in os.environ:
            return None
        return self.convert(os.environ[self.env], source=f"env {self.env}")

    def resolve(self, explicit: Any, section: Mapping[str, Any]) -> Any:
        """This arg's value by the documented precedence: an explicit value, then the
        ``additional_config["arctic"]`` section, then the env variable, then the default."""
        if explicit is not None:
            return self.convert(explicit, source="argument")
        if section.get(self.name) is not None:
            return self.convert(section[self.name], source=f'additional_config["{ADDITIONAL_CONFIG_KEY}"]')
        from_env = self.env_value()
        return self.default if from_env is None else from_env

    def value_for(self, vllm_config: Any | None) -> Any:
        """This arg's value for a built config, without needing the registry (so usable
        where the plugin has not registered its args, e.g. a patched method in a test)."""
        additional = getattr(vllm_config, "additional_config", None) or {}
        return self.resolve(None, additional.get(ADDITIONAL_CONFIG_KEY) or {})

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


def arctic_section(additional_config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``"arctic"`` mapping inside ``additional_config``, validated."""
    section = (additional_config or {}).get(ADDITIONAL_CONFIG_KEY) or {}
    if not isinstance(section, Mapping):
        raise ValueError(
            f'additional_config["{ADDITIONAL_CONFIG_KEY}"] must be a mapping of Arctic '
            f"arg names to values, got {section!r}."
        )
    unknown = sorted(set(section) - {a.name for a in registered_args()})
    if unknown:
        known = ", ".join(a.name for a in registered_args()) or "none"
        raise ValueError(
            f'additional_config["{ADDITIONAL_CONFIG_KEY}"] has unknown key(s) '
            f"{', '.join(unknown)}; registered Arctic args: {known}."
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
