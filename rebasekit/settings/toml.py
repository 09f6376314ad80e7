"""Read TOML files with one error policy: a file that exists but is not valid TOML is bad input.

Falling back to defaults for a broken file would silently analyse another plugin, no
patches, or (for a pin at an old commit) report a revision as having no pin at all, so
every TOML text rebasekit reads goes through :func:`parse_toml` and fails the same way.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rebasekit.errors import SettingsError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with the tomli backport (same API)
    import tomli as tomllib

__all__ = ["parse_toml", "read_toml", "tomllib"]


def parse_toml(text: str, origin: str) -> dict:
    """The TOML document in ``text``; ``origin`` names the file in the error message."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        name = origin.rsplit("/", 1)[-1].split(" ", 1)[0]
        raise SettingsError(
            f"{origin} is not valid TOML ({exc})", hint=f"fix the syntax of {name}"
        ) from None


def read_toml(path: Path) -> dict | None:
    """The TOML document at ``path``, or None when there is no such file."""
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(
            f"{path} cannot be read as UTF-8 text ({exc})", hint=f"fix or remove {path.name}"
        ) from None
    return parse_toml(text, str(path))
