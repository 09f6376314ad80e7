"""The typed shape of everything rebasekit reads from a project's configuration files.

One model, validated in one place: ``[tool.rebasekit]`` (of ``pyproject.toml`` or of a
plugin package's ``rebasekit.toml``) and the parts of ``[project]`` rebasekit relies on
(the vLLM pin in an optional-dependency extra, the ``vllm.general_plugins`` entry point).
A value of the wrong type or an unknown key is a :class:`~rebasekit.errors.SettingsError`
naming the file, the key and the fix, never a silent default.
"""

from __future__ import annotations

import re

import msgspec

from rebasekit.errors import SettingsError

DEFAULT_BRANCH_GLOBS = ("rebase/vllm_v*",)
DEFAULT_PROBES = "probes/evolution_probes.toml"
DEFAULT_CONSTANT = "VLLM_PATCH_VERSION"

# How to write each key right: the hint of its error message.
EXAMPLES = {
    "plugin": 'plugin = "package_name"',
    "patch-bases": 'patch-bases = ["PatchBase"]',
    "forks": 'forks = { "pkg/module.py" = "vllm/module.py@0.26.0" }',
    "pin-package": 'pin-package = "vllm"',
    "pin-extra": 'pin-extra = "vllm"',
    "pin-constant": 'pin-constant = "pkg/module.py:VLLM_PATCH_VERSION" ("" disables it)',
    "rebase-branches": 'rebase-branches = ["rebase/vllm_v*"]',
    "main-branch": 'main-branch = "main"',
    "probes": 'probes = "probes/evolution_probes.toml"',
}


class RebasekitSettings(
    msgspec.Struct, frozen=True, kw_only=True, rename="kebab", forbid_unknown_fields=True
):
    """The ``[tool.rebasekit]`` table; every key is optional."""

    plugin: str | None = None  # the plugin's import name (default: its entry point's package)
    patch_bases: str | list[str] | None = None  # class names that mark a patch
    forks: dict[str, str] = msgspec.field(default_factory=dict)  # file -> "UPSTREAM@VERSION"
    pin_package: str = "vllm"  # the pinned distribution
    pin_extra: str = "vllm"  # the optional-dependency extra that carries the pin
    pin_constant: str | None = None  # "PATH:NAME" of a version constant; "" disables it
    rebase_branches: str | list[str] = msgspec.field(
        default_factory=lambda: list(DEFAULT_BRANCH_GLOBS)
    )
    main_branch: str = "main"
    probes: str = DEFAULT_PROBES

    @property
    def patch_base_names(self) -> tuple[str, ...] | None:
        if self.patch_bases is None:
            return None
        return (self.patch_bases,) if isinstance(self.patch_bases, str) else tuple(self.patch_bases)

    @property
    def branch_globs(self) -> tuple[str, ...]:
        globs = self.rebase_branches
        return (globs,) if isinstance(globs, str) else tuple(globs)

    def constant(self) -> tuple[str, str] | None:
        """``(path, name)`` of ``pin-constant``; None when unset or disabled."""
        if not self.pin_constant:
            return None
        path, _, name = self.pin_constant.rpartition(":")
        return path, name


class ProjectTable(msgspec.Struct, frozen=True, kw_only=True, rename="kebab"):
    """The PEP 621 ``[project]`` keys rebasekit reads (other keys are not its business)."""

    dependencies: list[str] = msgspec.field(default_factory=list)
    optional_dependencies: dict[str, list[str]] = msgspec.field(default_factory=dict)
    entry_points: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)


class _Tool(msgspec.Struct, frozen=True):
    rebasekit: RebasekitSettings = msgspec.field(default_factory=RebasekitSettings)


class _ToolDocument(msgspec.Struct, frozen=True):
    tool: _Tool = msgspec.field(default_factory=_Tool)


class _ProjectDocument(msgspec.Struct, frozen=True):
    project: ProjectTable = msgspec.field(default_factory=ProjectTable)


def tool_settings(document: dict, origin: str) -> RebasekitSettings:
    """The validated ``[tool.rebasekit]`` table of a parsed TOML document."""
    settings = _convert(document, _ToolDocument, origin).tool.rebasekit
    _check_values(settings, origin)
    return settings


def project_table(document: dict, origin: str) -> ProjectTable:
    """The validated ``[project]`` table of a parsed pyproject document."""
    return _convert(document, _ProjectDocument, origin).project


_PIN_CONSTANT = re.compile(r"^.+:[A-Za-z_]\w*$")
_PACKAGE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def _check_values(settings: RebasekitSettings, origin: str) -> None:
    """The rules a type cannot express."""
    if settings.plugin is not None and not _PACKAGE.match(settings.plugin):
        _fail(origin, "plugin", f"{settings.plugin!r} is not a Python import name")
    if settings.pin_constant and not _PIN_CONSTANT.match(settings.pin_constant):
        _fail(origin, "pin-constant", f"{settings.pin_constant!r} is not PATH:NAME")
    for path, target in settings.forks.items():
        if "@" not in target:
            _fail(origin, "forks", f"{path} = {target!r} is not UPSTREAM_PATH@VERSION")


def _fail(origin: str, key: str, problem: str) -> None:
    raise SettingsError(f"{origin}: [tool.rebasekit] {key}: {problem}", hint=_hint(key))


def _hint(key: str) -> str:
    example = EXAMPLES.get(key)
    return f"write {example}" if example else f"known keys: {', '.join(EXAMPLES)}"


_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)


def _convert(document: dict, kind: type, origin: str):
    try:
        return msgspec.convert(document, kind)
    except msgspec.ValidationError as exc:
        raise _validation_error(str(exc), origin) from None


def _validation_error(text: str, origin: str) -> SettingsError:
    """A one-line SettingsError from msgspec's ``"<problem> - at `$.a.b[0]`"``."""
    match = _AT.match(text)
    what = (match.group("what") if match else text).replace(" | null", "")
    parts = [p for p in re.split(r"\.|\[", (match.group("path") or "") if match else "") if p]
    parts = [p for p in parts if not p.endswith("]")]
    unknown = re.match(r"Object contains unknown field `(.+)`", what)
    if parts[:2] == ["tool", "rebasekit"]:
        if unknown:
            return SettingsError(
                f"{origin}: [tool.rebasekit] has no key {unknown.group(1)!r}",
                hint=f"known keys: {', '.join(EXAMPLES)}",
            )
        if len(parts) == 2:
            return SettingsError(
                f"{origin}: tool.rebasekit is not a table", hint="write it as [tool.rebasekit]"
            )
        key = parts[2]
        return SettingsError(
            f"{origin}: [tool.rebasekit] {key}: {what[0].lower()}{what[1:]}", hint=_hint(key)
        )
    table = ".".join(parts[:1]) or "document"
    key = ".".join(parts[1:]) or table
    return SettingsError(
        f"{origin}: [{table}] {key}: {what[0].lower()}{what[1:]}",
        hint="see PEP 621 for the [project] table's shape"
        if table == "project"
        else f"fix {key} in {origin}",
    )
