"""Probe definitions (TOML or JSON) and their evaluation on one snapshot's files.

A probe is one row of the ledger: a label, a file, and one question about that file.
Kinds, told apart by which key is present:

``regex``        text of a match (``group``, ``dotall``, ``all`` refine it)
``signature``    ``Class.method`` signature, from the AST
``returns``      return expression(s) of a function, from the AST
``constant``     source of the value bound to a name, from the AST
``calls``        "yes"/"no": does the file call ``f`` anywhere
``requirement``  specifier of a package in ``pyproject.toml`` (``extra`` narrows it)
``pin = true``   the vLLM pin as compare-pins resolves it (no ``file`` needed)

An evaluation never raises for a file that is missing or does not parse: the cell says
so, because "the file did not exist at this pin" is itself information.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from rebasekit.astutil import parse_text
from rebasekit.errors import InputError, SettingsError
from rebasekit.history import structural
from rebasekit.history.pins import FileReader
from rebasekit.settings import parse_toml, project_table
from rebasekit.settings.toml import tomllib

KINDS = ("regex", "signature", "returns", "constant", "calls", "requirement", "pin")
_OPTIONS = {"label", "file", "group", "dotall", "all", "extra", "note", *KINDS}


@dataclass(frozen=True)
class Probe:
    """One ledger row: ``kind`` with its ``target`` (a regex, a dotted name, a package)."""

    label: str
    kind: str
    target: str
    file: str | None = None
    group: int | str | None = None
    dotall: bool = False
    all_matches: bool = False
    extra: str | None = None
    note: str | None = None

    def files(self) -> tuple[str, ...]:
        return (self.file,) if self.file else ()


@dataclass(frozen=True)
class Cell:
    """A probe's value at one column; ``value`` None means missing, ``why`` says how."""

    value: str | None
    why: str | None = None

    @property
    def missing(self) -> bool:
        return self.value is None


def _probe_from_table(table: object, where: str) -> Probe:
    if not isinstance(table, dict):
        raise InputError(f"{where}: a probe must be a table, got {table!r}")
    unknown = sorted(set(table) - _OPTIONS)
    if unknown:
        raise InputError(
            f"{where}: unknown probe key(s) {', '.join(unknown)}",
            hint=f"known keys: {', '.join(sorted(_OPTIONS))}",
        )
    label = table.get("label")
    if not isinstance(label, str) or not label.strip():
        raise InputError(f"{where}: every probe needs a non-empty 'label'")
    kinds = [k for k in KINDS if k in table]
    if len(kinds) != 1:
        raise InputError(
            f"{where} ({label}): give exactly one of {', '.join(KINDS)}; got {kinds or 'none'}"
        )
    kind = kinds[0]
    target = table[kind]
    if kind == "pin":
        if target is not True:
            raise InputError(f"{where} ({label}): write 'pin = true'")
        target = "pin"
    elif not isinstance(target, str) or not target:
        raise InputError(f"{where} ({label}): '{kind}' must be a non-empty string")
    file = table.get("file")
    if kind != "pin" and (not isinstance(file, str) or not file):
        raise InputError(f"{where} ({label}): '{kind}' probes need a 'file' (repo-relative path)")
    if kind == "regex":
        try:
            compiled = re.compile(target)
        except re.error as exc:
            raise InputError(f"{where} ({label}): bad regex {target!r}: {exc}") from None
        group = table.get("group")
        if isinstance(group, int) and not 0 <= group <= compiled.groups:
            raise InputError(
                f"{where} ({label}): regex has {compiled.groups} group(s), not {group}"
            )
        if isinstance(group, str) and group not in compiled.groupindex:
            raise InputError(f"{where} ({label}): regex has no group named {group!r}")
    return Probe(
        label=label.strip(),
        kind=kind,
        target=target,
        file=file,
        group=table.get("group"),
        dotall=bool(table.get("dotall", False)),
        all_matches=bool(table.get("all", False)),
        extra=table.get("extra"),
        note=table.get("note"),
    )


_LIST_KEYS = ("probe", "probes")
_FORMS = (
    'TOML [[probe]] tables, or JSON {"probes": [{"label", "file", "regex", ...}]} '
    '(a bare list, or the key "probe", also reads)'
)


def _probe_items(data: object, where: str) -> object:
    """The list of probe tables: a bare list, or the ``probe`` / ``probes`` key of a table.

    ``probes`` is the key of the JSON probe files of the rebase workflow this ledger
    follows; ``probe`` is what TOML's ``[[probe]]`` array of tables produces.
    """
    if not isinstance(data, dict):
        return data
    present = [k for k in _LIST_KEYS if k in data]
    if len(present) == 2:
        raise InputError(
            f"{where} has both 'probe' and 'probes'",
            hint="keep one list of probes (merge them under one key)",
        )
    if not present:
        other = ", ".join(sorted(map(str, data))) or "nothing"
        raise InputError(
            f"{where} defines no probes (its top level has {other})",
            hint=f"write the probes as {_FORMS}",
        )
    return data[present[0]]


def parse_probes(text: str, fmt: str, where: str) -> list[Probe]:
    """Probes from TOML (``[[probe]]`` tables) or JSON (a list, ``{"probes": [...]}`` or
    ``{"probe": [...]}``)."""
    try:
        data = json.loads(text) if fmt == "json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{where} is not valid {fmt.upper()}: {exc}") from None
    items = _probe_items(data, where)
    if not isinstance(items, list) or not items:
        raise InputError(f"{where} defines no probes", hint=f"write the probes as {_FORMS}")
    probes = [_probe_from_table(t, f"{where} probe #{i + 1}") for i, t in enumerate(items)]
    seen: set[str] = set()
    for probe in probes:
        if probe.label in seen:
            raise InputError(f"{where}: two probes are labelled {probe.label!r}")
        seen.add(probe.label)
    return probes


def load_probes(path: Path) -> list[Probe]:
    """Read a probe file; its suffix (``.json`` or anything else = TOML) picks the format."""
    if not path.is_file():
        raise InputError(
            f"probe file {path} does not exist",
            hint="pass --probes FILE or create probes/evolution_probes.toml",
        )
    fmt = "json" if path.suffix.lower() == ".json" else "toml"
    return parse_probes(path.read_text(encoding="utf-8"), fmt, str(path))


def _regex(probe: Probe, text: str) -> Cell:
    flags = re.DOTALL if probe.dotall else 0
    pattern = re.compile(probe.target, flags | re.MULTILINE)
    group = probe.group if probe.group is not None else (1 if pattern.groups else 0)
    values = []
    for match in pattern.finditer(text):
        picked = match.group(group)
        if picked is not None:
            values.append(" ".join(picked.split()))
        if not probe.all_matches:
            break
    return Cell(", ".join(values)) if values else Cell(None, "no match")


def _requirement(probe: Probe, text: str) -> Cell:
    try:
        project = project_table(parse_toml(text, probe.file or "pyproject.toml"), probe.file or "")
    except SettingsError:
        return Cell(None, "unparsable")
    lists: list[object] = []
    if probe.extra is None or probe.extra == "":
        lists.append(project.dependencies)
    if probe.extra != "":
        extras = project.optional_dependencies
        lists.extend(extras.values() if probe.extra is None else [extras.get(probe.extra, [])])
    wanted = canonicalize_name(probe.target)
    for items in lists:
        for item in items if isinstance(items, list) else []:
            try:
                req = Requirement(item) if isinstance(item, str) else None
            except InvalidRequirement:
                continue
            if req and canonicalize_name(req.name) == wanted:
                return Cell(str(req.specifier) or "(any version)")
    return Cell(None, "not required")


_STRUCTURAL: dict[str, Callable[[ast.Module, str], str | None]] = {
    "signature": structural.signature,
    "returns": structural.return_expression,
    "constant": structural.constant,
}


def evaluate(probe: Probe, read_file: FileReader, pin: str | None) -> Cell:
    """The probe's cell for one snapshot (``pin`` is the snapshot's resolved pin)."""
    if probe.kind == "pin":
        return Cell(pin) if pin else Cell(None, "no pin")
    assert probe.file is not None
    text = read_file(probe.file)
    if text is None:
        return Cell(None, "no file")
    if probe.kind == "regex":
        return _regex(probe, text)
    if probe.kind == "requirement":
        return _requirement(probe, text)
    tree = parse_text(text)
    if tree is None:
        return Cell(None, "unparsable")
    if probe.kind == "calls":
        return Cell("yes" if structural.contains_call(tree, probe.target) else "no")
    value = _STRUCTURAL[probe.kind](tree, probe.target)
    return Cell(value) if value is not None else Cell(None, "not defined")
