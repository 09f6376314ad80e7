"""Read the vLLM pin a snapshot of the plugin declares, and order pins as versions.

The pin lives in ``pyproject.toml``'s ``vllm`` optional-dependency extra. It is read with
rebasekit's settings model and ``packaging.requirements`` rather than a regex, because a regex cannot tell
the extra from a comment that mentions ``vllm==X`` or from another extra that pins a
different vLLM for another purpose (say, a benchmark baseline). When the extra names vLLM
without an exact version, the pin falls back to a version constant in code
(``VLLM_PATCH_VERSION = "0.26.0"``), read from the module's AST. A pyproject that is not
valid TOML, or whose ``[project]`` table has the wrong shape, raises
:class:`~rebasekit.errors.SettingsError`: the pin of that snapshot is unknown, not absent.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from rebasekit.settings import ProjectTable, parse_toml, project_table

# Reads a repo-relative file of one snapshot; None when the file does not exist there.
FileReader = Callable[[str], "str | None"]


@dataclass(frozen=True)
class PinSource:
    """Where a snapshot declares its pin (configurable in ``[tool.rebasekit]``)."""

    package: str = "vllm"  # the distribution that is pinned
    extra: str = "vllm"  # the optional-dependency extra that carries the pin
    pyproject: str = "pyproject.toml"
    constant_file: str | None = None  # repo-relative module with the version constant
    constant_name: str = "VLLM_PATCH_VERSION"

    def paths(self) -> tuple[str, ...]:
        """Files whose content decides the pin (the history miner watches these)."""
        return (self.pyproject,) + ((self.constant_file,) if self.constant_file else ())


@dataclass(frozen=True)
class Pin:
    """A declared pin and where it was read from (``extra`` or ``constant``)."""

    version: str
    origin: str

    def sort_key(self) -> tuple[int, Version | str]:
        return version_key(self.version)


def version_key(text: str | None) -> tuple[int, Version | str]:
    """Sort key ordering versions numerically (0.9.0.1 < 0.10.1); junk sorts last."""
    if text is None:
        return (2, "")
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)


def _exact_version(requirement: Requirement) -> str | None:
    exact = [s.version for s in requirement.specifier if s.operator in ("==", "===")]
    if len(exact) == 1 and "*" not in exact[0]:
        return exact[0]
    return None


def requirement_in(items: object, package: str) -> Requirement | None:
    """The first requirement in a list of PEP 508 strings that names ``package``."""
    if not isinstance(items, list):
        return None
    wanted = canonicalize_name(package)
    for item in items:
        if not isinstance(item, str):
            continue
        try:
            req = Requirement(item)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == wanted:
            return req
    return None


def pin_in(project: ProjectTable, source: PinSource) -> str | None:
    """The exact version the configured extra pins ``source.package`` to, if any."""
    req = requirement_in(project.optional_dependencies.get(source.extra), source.package)
    return _exact_version(req) if req else None


def pin_from_pyproject(text: str, source: PinSource) -> str | None:
    """:func:`pin_in` of a pyproject text (say, at a git commit)."""
    return pin_in(project_table(parse_toml(text, source.pyproject), source.pyproject), source)


def constant_value(text: str, name: str) -> str | None:
    """The string a module-level ``NAME = "..."`` (or annotated) assignment binds."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        else:
            continue
        value = node.value
        if name in targets and isinstance(value, ast.Constant) and isinstance(value.value, str):
            return value.value
    return None


def read_pin(read_file: FileReader, source: PinSource) -> Pin | None:
    """The pin of one snapshot: the extra first, the code constant as fallback.

    Raises :class:`~rebasekit.errors.SettingsError` when the pyproject cannot be read (the
    pin is unknown).
    """
    text = read_file(source.pyproject)
    if text is not None:
        version = pin_from_pyproject(text, source)
        if version:
            return Pin(version, "extra")
    if source.constant_file:
        code = read_file(source.constant_file)
        if code is not None:
            version = constant_value(code, source.constant_name)
            if version:
                return Pin(version, "constant")
    return None
