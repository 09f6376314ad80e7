"""Small helpers shared by the plugin modules (logging, parsing, lazy import)."""

from __future__ import annotations

import importlib
import logging

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def get_logger(name: str) -> logging.Logger:
    """A logger under vLLM's ``vllm`` tree so our lines share its format and level.

    vLLM configures the ``vllm`` logger (handler, format, ``VLLM_LOGGING_LEVEL``)
    at import; children of it inherit that, so Arctic lines look like vLLM's
    and land in the same stream in every process.
    """
    return logging.getLogger(f"vllm.arctic_inference.{name.rsplit('.', 1)[-1]}")


def parse_bool(text: str, *, source: str) -> bool:
    """Parse a boolean switch; ``source`` names where the text came from."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{source}={text!r} is not a boolean. Use 1/true/yes/on or 0/false/no/off.")


def import_object(path: str) -> object:
    """Import ``package.module:attribute``; errors name the path that failed.

    Patch sets refer to patch classes by path so that nothing is imported
    (and no vLLM worker module is loaded) until the patch is really applied.
    """
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{path!r} is not an import path; write 'package.module:Name'.")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ImportError(f"{module_name} has no attribute {attr!r} (from {path!r}).") from None
