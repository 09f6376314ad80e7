"""Small helpers shared by the plugin modules."""

from __future__ import annotations

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def parse_bool(text: str, *, source: str) -> bool:
    """Parse a boolean switch; ``source`` names where the text came from."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{source}={text!r} is not a boolean. Use 1/true/yes/on or 0/false/no/off.")
