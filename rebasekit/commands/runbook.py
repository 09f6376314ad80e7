"""``rebasekit runbook``: the validation plan for a rebase (thin shell over rebasekit.runbook)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from rebasekit.atomic import check_replaceable, write_generated
from rebasekit.commands._common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    AllowIncompleteOpt,
    emit,
    gate,
    handle_errors,
)
from rebasekit.errors import InputError
from rebasekit.runbook.plan import Settings, build_runbook
from rebasekit.runbook.project import changed_since, entry_point, plugin_folder, plugin_name
from rebasekit.runbook.render import to_markdown
from rebasekit.runbook.results import load_results
from rebasekit.runbook.serving import MODEL_PLACEHOLDER
from rebasekit.runbook.testmap import scan_tests
from rebasekit.scan import scan_plugin
from rebasekit.settings import load_project

HELP = (
    "Write the validation plan for moving the plugin from vLLM OLD to NEW.\n\n"
    "Findings come from the scan (--from/--to take a version, a folder or REPO@REF). Each "
    "changed plugin file and each finding is mapped to the tests that exercise it, derived "
    "from the test suite (imports, names, markers). Phases follow in run order: smoke, CPU "
    "unit, GPU unit (GPU tests that build no engine), end-to-end per feature (GPU tests that "
    "build an engine, read from the tests and the helpers they run, placed by the vLLM "
    "features they drive), serving (with --model, a local path), each with its command, what passing "
    "looks like, and the runtime steps the findings put at risk. --record results.json fills "
    "the results column.\n\nExit code: 0 plan written, 1 a recorded phase failed, 2 bad input or an "
    "incomplete scan (see --allow-incomplete), 3 internal error."
)


def _parse_env(items: list[str]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise InputError(f"--env {item!r} is not KEY=VALUE")
        pairs.append((key, value))
    return tuple(pairs)


@handle_errors
def runbook_cmd(
    old: Annotated[str, typer.Option("--from", help="The pin the plugin supports now.")],
    new: Annotated[str, typer.Option("--to", help="The pin to rebase onto.")],
    write: Annotated[Path | None, typer.Option("--write", help="Write the markdown here.")] = None,
    record: Annotated[
        Path | None, typer.Option("--record", help="Recorded phase results (JSON).")
    ] = None,
    project: Annotated[
        Path, typer.Option("--project", help="Project root (pyproject, tests).")
    ] = Path("."),
    plugin: Annotated[str | None, typer.Option("--plugin", help="Plugin import name.")] = None,
    tests: Annotated[
        str, typer.Option("--tests", help="Test folder, relative to the project.")
    ] = "tests",
    env: Annotated[
        list[str] | None,
        typer.Option("--env", help="KEY=VALUE set for every command (repeatable)."),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--changed-since", help="Also map plugin files changed since this git ref."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Let --write replace a file rebasekit did not generate.")
    ] = False,
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="Model the serving phase starts: a local path on the (offline) GPU machine. The "
            "default, $MODEL, is a placeholder the commands require to be set there.",
        ),
    ] = MODEL_PLACEHOLDER,
    allow_incomplete: AllowIncompleteOpt = False,
) -> None:
    env = env or []
    if write:
        check_replaceable(write, "--write", force)
    root = project.resolve()
    declared = load_project(root)
    name = plugin_name(declared, plugin)
    folder = plugin_folder(declared, name)
    if folder is None:
        raise InputError(
            f"plugin package {name!r} not found under {root}",
            hint="pass --project with the folder holding the package (or its src/ layout)",
        )
    result = scan_plugin(new, old=old, plugin=folder)
    gate(result.degradations, allow_incomplete)  # a plan built on a partial scan would miss risks
    changed = changed_since(root, since, name) if since else []
    settings = Settings(name, entry_point(declared), _parse_env(env), model=model)
    book = build_runbook(
        old, new, result.findings, changed, scan_tests(root, tests, name), settings
    )
    results = load_results(record, [p.key for p in book.phases]) if record else {}
    parts = ["rebasekit", "runbook", "--from", old, "--to", new]
    for key, value in settings.env:
        parts += ["--env", f"{key}={value}"]
    if since:
        parts += ["--changed-since", since]
    if model != MODEL_PLACEHOLDER:
        parts += ["--model", model]
    if record:
        parts += ["--record", record.as_posix()]
    if write:
        parts += ["--write", write.as_posix()]
    text = to_markdown(book, shlex.join(parts), results)
    if write:
        write_generated(write, text)
        emit(f"wrote {write}: {len(book.changes)} changes, {len(book.phases)} phases")
    else:
        emit(text, end="")
    raise typer.Exit(
        EXIT_FINDINGS if any(r.status == "fail" for r in results.values()) else EXIT_CLEAN
    )


def register(app: typer.Typer) -> None:
    app.command("runbook", help=HELP)(runbook_cmd)
