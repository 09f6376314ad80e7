"""Options and plumbing shared by the scan-style commands (kept out of the analysis)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.console import Console

from rebasekit.errors import InputError, RebasekitError

PluginOpt = Annotated[Optional[Path], typer.Option("--plugin", help="Plugin package folder (default: [tool.rebasekit] plugin of the project).")]
PatchBaseOpt = Annotated[Optional[list[str]], typer.Option("--patch-base", help="Name of a patch marker base class (repeatable; default: [tool.rebasekit] patch-bases).")]
VllmOpt = Annotated[Optional[str], typer.Option("--vllm", help="Upstream 'vllm' package folder (or the folder containing it).")]
VllmVersionOpt = Annotated[Optional[str], typer.Option("--vllm-version", help="Upstream release X.Y.Z, downloaded once into the cache.")]
VllmGitOpt = Annotated[Optional[str], typer.Option("--vllm-git", help="Upstream git checkout and ref, as REPO@REF.")]
FromOpt = Annotated[Optional[str], typer.Option("--from", help="OLD tree (folder, X.Y.Z or REPO@REF): classify each finding as new or preexisting.")]
ToOpt = Annotated[Optional[str], typer.Option("--to", help="NEW tree (folder, X.Y.Z or REPO@REF) to scan against.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the JSON report (rebasekit/report/SCHEMA.md).")]
SarifOpt = Annotated[bool, typer.Option("--sarif", help="Print a SARIF 2.1.0 log.")]
SelectOpt = Annotated[Optional[list[str]], typer.Option("--select", help="Only these codes (prefix match, repeatable or comma-separated).")]
IgnoreOpt = Annotated[Optional[list[str]], typer.Option("--ignore", help="Drop these codes (prefix match, repeatable or comma-separated).")]

EXIT_CLEAN, EXIT_FINDINGS, EXIT_BAD_INPUT = 0, 1, 2


def err_console() -> Console:
    return Console(stderr=True, highlight=False)


def handle_errors(func: Callable) -> Callable:
    """Turn :class:`RebasekitError` into a two-line message and exit code 2."""

    @wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except RebasekitError as exc:
            console = err_console()
            # Messages quote TOML tables and code ("[tool.rebasekit]"): never read them as markup.
            console.print(f"[bold red]error:[/bold red] {escape(exc.message)}", soft_wrap=True)
            if exc.hint:
                console.print(f"[bold]hint:[/bold] {escape(exc.hint)}", soft_wrap=True)
            raise typer.Exit(EXIT_BAD_INPUT) from None

    return wrapper


def split_codes(values: list[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for value in values or []:
        out += [v.strip().upper() for v in value.split(",") if v.strip()]
    return tuple(out)


def pick_trees(vllm: str | None, vllm_version: str | None, vllm_git: str | None,
               to: str | None, from_: str | None) -> tuple[str, str | None]:
    """The NEW spec and optional OLD spec from the mutually exclusive tree options."""
    given = [(n, v) for n, v in (("--vllm", vllm), ("--vllm-version", vllm_version),
                                 ("--vllm-git", vllm_git), ("--to", to)) if v]
    if len(given) > 1:
        raise InputError(f"{' and '.join(n for n, _ in given)} both name the tree to scan",
                         hint="give exactly one of --vllm, --vllm-version, --vllm-git or --to")
    if not given:
        raise InputError("no upstream tree given",
                         hint="add --vllm-version 0.26.0 (or --vllm PATH, --vllm-git REPO@REF, --to ...)")
    name, value = given[0]
    if name == "--vllm" and not Path(value).expanduser().is_dir():
        raise InputError(f"--vllm {value}: no such folder", hint="point --vllm at an unpacked 'vllm' package folder")
    if name == "--vllm-version" and Path(value).expanduser().exists():
        raise InputError(f"--vllm-version {value}: that is a path, not a release number",
                         hint=f"pass a folder with --vllm {value}, or a release like --vllm-version 0.26.0")
    if name == "--vllm-git" and "@" not in value:
        raise InputError(f"--vllm-git {value}: expected REPO@REF", hint="e.g. --vllm-git ~/src/vllm@v0.27.0")
    return value, from_


def emit(text: str) -> None:
    sys.stdout.write(text + "\n")
