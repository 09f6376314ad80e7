"""Errors that mean "bad input": the CLI prints them with their hint and exits 2.

Every failure a user can fix (a wrong path, an unknown version, no network, a damaged
cache) is raised as a :class:`RebasekitError` subclass carrying a ``hint`` that says what
to do, so no such failure ever reaches the user as a traceback.
"""

from __future__ import annotations


class RebasekitError(Exception):
    """Base of all user-facing errors; ``hint`` tells the user how to fix the input."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        return self.message if not self.hint else f"{self.message}\nhint: {self.hint}"


class InputError(RebasekitError):
    """A command-line value is malformed or names something that does not exist."""


class TreeNotFoundError(InputError):
    """A folder or repository given as an upstream tree does not exist or is not one."""


class UnknownVersionError(RebasekitError):
    """The package registry has no wheel for the requested version."""


class NetworkError(RebasekitError):
    """The package registry could not be reached."""


class DownloadError(RebasekitError):
    """Fetching or unpacking a wheel failed for another reason."""


class CacheError(RebasekitError):
    """A cached tree is partial or corrupt."""


class GitRefError(InputError):
    """A ``REPO@REF`` spec names no repository or no such ref."""


class PluginError(InputError):
    """The plugin folder is missing or is not a Python package."""


class SettingsError(InputError):
    """A settings file (pyproject.toml, rebasekit.toml, setup.cfg) is unreadable or invalid."""
