"""Options and plumbing shared by the scan-style commands (kept out of the analysis)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

from rebasekit.codes import CODES
from rebasekit.errors import InputError, RebasekitError

PluginOpt = Annotated[
    Path | None,
    typer.Option(
        "--plugin",
        # \\[ : a literal bracket; rich would read "[tool.rebasekit]" as markup and drop it.
        help="Plugin package folder (default: \\[tool.rebasekit] plugin of the project, else the"
        " package of its vllm.general_plugins entry point).",
    ),
]
PatchBaseOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--patch-base",
        help="Name of a patch marker base class (repeatable; default: \\[tool.rebasekit] patch-bases).",
    ),
]
VllmOpt = Annotated[
    str | None,
    typer.Option("--vllm", help="Upstream 'vllm' package folder (or the folder containing it)."),
]
VllmVersionOpt = Annotated[
    str | None,
    typer.Option("--vllm-version", help="Upstream release X.Y.Z, downloaded once into the cache."),
]
VllmGitOpt = Annotated[
    str | None, typer.Option("--vllm-git", help="Upstream git checkout and ref, as REPO@REF.")
]
FromOpt = Annotated[
    str | None,
    typer.Option(
        "--from",
        help="OLD tree (folder, X.Y.Z or REPO@REF): classify each finding as new or preexisting.",
    ),
]
ToOpt = Annotated[
    str | None, typer.Option("--to", help="NEW tree (folder, X.Y.Z or REPO@REF) to scan against.")
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the JSON report (rebasekit/report/SCHEMA.md).")
]
SarifOpt = Annotated[bool, typer.Option("--sarif", help="Print a SARIF 2.1.0 log.")]
SelectOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--select", help="Only these codes (prefix match, repeatable or comma-separated)."
    ),
]
IgnoreOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore", help="Drop these codes (prefix match, repeatable or comma-separated)."
    ),
]

PinTreeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--pin-tree",
        metavar="PIN=SPEC",
        help="Upstream tree for a sub-package that declares its own pin (folder or REPO@REF)"
        " instead of the downloaded release (repeatable).",
    ),
]


def pin_tree_pairs(items: list[str] | None, flag: str) -> tuple[tuple[str, str], ...]:
    """``PIN=SPEC`` pairs from a repeatable option; bad input names the expected form."""
    pairs = []
    for item in items or ():
        pin, sep, spec = item.partition("=")
        if not sep or not pin.strip() or not spec.strip():
            raise InputError(
                f"{flag} {item!r} is not PIN=SPEC",
                hint=f"write it like {flag} 0.26.0=/path/to/vllm-0.26.0 (a folder or REPO@REF)",
            )
        pairs.append((pin.strip(), spec.strip()))
    return tuple(pairs)


AllowIncompleteOpt = Annotated[
    bool,
    typer.Option(
        "--allow-incomplete",
        help="Exit 0/1 even when part of the analysis could not be done (the warnings are still printed).",
    ),
]

# The exit-code contract every command holds (README "Exit codes").
EXIT_CLEAN, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INCOMPLETE = EXIT_BAD_INPUT
DEBUG_ENV = "REBASEKIT_DEBUG"
EXIT_CODES_HELP = (
    "Exit codes: 0 clean, 1 findings, 2 bad input or an incomplete analysis "
    "(see --allow-incomplete), 3 internal error (a bug; --debug or "
    f"{DEBUG_ENV}=1 shows the traceback)."
)


def err_console() -> Console:
    from rich.console import Console  # rich loads only when something is printed through it

    return Console(stderr=True, highlight=False)


def escape(text: str) -> str:
    """``text`` with rich markup escaped (rich's own ``escape``, loaded on use)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


_DEBUG_OPTION = {"on": False}  # set by ``rebasekit --debug`` for the current invocation


def set_debug(on: bool) -> None:
    _DEBUG_OPTION["on"] = on


def debug_enabled() -> bool:
    """``--debug`` given, or ``REBASEKIT_DEBUG`` set to a true value: bugs re-raise."""
    return _DEBUG_OPTION["on"] or os.environ.get(DEBUG_ENV, "").strip().lower() in (
        "1",
        "true",
        "yes",
        "on",
    )


def fail(message: str, hint: str | None, code: int) -> typer.Exit:
    """Print ``error: message`` (and ``hint: ...``) on stderr; the Exit to raise."""
    console = err_console()
    # Messages quote TOML tables and code ("[tool.rebasekit]"): never read them as markup.
    console.print(f"[bold red]error:[/bold red] {escape(message)}", soft_wrap=True)
    if hint:
        console.print(f"[bold]hint:[/bold] {escape(hint)}", soft_wrap=True)
    return typer.Exit(code)


def handle_errors(func: Callable) -> Callable:
    """Hold the exit-code contract: bad input 2, a bug 3, never a traceback by default.

    A :class:`RebasekitError` (the user can fix it) and an ``OSError`` on a path the user
    named (missing, unwritable, a file where a folder belongs) exit 2 with a one-line
    message; anything else is a bug in rebasekit: one line saying so and how to see the
    traceback, exit 3 (never 1, which would read as "findings").
    """

    @wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.BadParameter, KeyboardInterrupt, SystemExit):
            raise
        except RebasekitError as exc:
            if debug_enabled():
                raise
            raise fail(exc.message, exc.hint, EXIT_BAD_INPUT) from None
        except OSError as exc:
            if debug_enabled():
                raise
            where = exc.filename if exc.filename is not None else "a file"
            raise fail(
                f"{where}: {exc.strerror or exc}",
                "check that the path exists, is of the right kind (file or folder) and is writable",
                EXIT_BAD_INPUT,
            ) from None
        except Exception as exc:  # noqa: BLE001 - the contract: a bug exits 3, with one line
            if debug_enabled():
                raise
            raise fail(
                f"internal error (a bug in rebasekit): {type(exc).__name__}: {exc}",
                f"rerun with --debug (or {DEBUG_ENV}=1) for the traceback and report it",
                EXIT_INTERNAL,
            ) from None

    return wrapper


def warn_degradations(degradations) -> None:
    """One ``warning:`` line per degradation on stderr (for --json/--sarif runs)."""
    if not degradations:
        return
    console = err_console()
    for d in degradations:
        console.print(f"[bold yellow]warning:[/bold yellow] {escape(d.render())}", soft_wrap=True)


def verdict(has_findings: bool, degradations, allow_incomplete: bool) -> int:
    """The exit code of an analysis: incomplete (2) unless allowed, else findings (1) or clean (0)."""
    if degradations and not allow_incomplete:
        fail(
            f"incomplete analysis: {len(degradations)} thing(s) could not be checked (see the warnings)",
            "fix what the warnings name, or pass --allow-incomplete to accept a partial result",
            EXIT_INCOMPLETE,
        )
        return EXIT_INCOMPLETE
    return EXIT_FINDINGS if has_findings else EXIT_CLEAN


def gate(degradations, allow_incomplete: bool, *, writes: bool = True) -> None:
    """Warn about each degradation; stop with exit 2 (before any write) unless allowed."""
    warn_degradations(degradations)
    if degradations and not allow_incomplete:
        raise fail(
            f"incomplete analysis: {len(degradations)} thing(s) could not be checked (see the warnings)"
            + ("; nothing was written" if writes else ""),
            "fix what the warnings name, or pass --allow-incomplete",
            EXIT_INCOMPLETE,
        )


def known_codes_check(values: tuple[str, ...], option: str) -> tuple[str, ...]:
    """Refuse ``--select``/``--ignore`` values that are no code or code prefix (exit 2)."""
    unknown = [v for v in values if not any(code.startswith(v) for code in CODES)]
    if unknown:
        raise InputError(
            f"{option} {', '.join(unknown)}: no such code",
            hint="known codes: " + ", ".join(sorted(CODES)),
        )
    return values


def split_codes(values: list[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for value in values or []:
        out += [v.strip().upper() for v in value.split(",") if v.strip()]
    return tuple(out)


def pick_trees(
    vllm: str | None,
    vllm_version: str | None,
    vllm_git: str | None,
    to: str | None,
    from_: str | None,
) -> tuple[str, str | None]:
    """The NEW spec and optional OLD spec from the mutually exclusive tree options."""
    given = [
        (n, v)
        for n, v in (
            ("--vllm", vllm),
            ("--vllm-version", vllm_version),
            ("--vllm-git", vllm_git),
            ("--to", to),
        )
        if v
    ]
    if len(given) > 1:
        raise InputError(
            f"{' and '.join(n for n, _ in given)} both name the tree to scan",
            hint="give exactly one of --vllm, --vllm-version, --vllm-git or --to",
        )
    if not given:
        raise InputError(
            "no upstream tree given",
            hint="add --vllm-version 0.26.0 (or --vllm PATH, --vllm-git REPO@REF, --to ...)",
        )
    name, value = given[0]
    if name == "--vllm" and not Path(value).expanduser().is_dir():
        raise InputError(
            f"--vllm {value}: no such folder",
            hint="point --vllm at an unpacked 'vllm' package folder",
        )
    if name == "--vllm-version" and Path(value).expanduser().exists():
        raise InputError(
            f"--vllm-version {value}: that is a path, not a release number",
            hint=f"pass a folder with --vllm {value}, or a release like --vllm-version 0.26.0",
        )
    if name == "--vllm-git" and "@" not in value:
        raise InputError(
            f"--vllm-git {value}: expected REPO@REF", hint="e.g. --vllm-git ~/src/vllm@v0.27.0"
        )
    return value, from_


# The one output path of every command: plain text through emit(), rich renderings through
# out_console(), notes and errors on stderr through note() and fail().


def emit(text: str, end: str = "\n") -> None:
    """Print plain text on stdout, byte for byte (JSON, SARIF, diffs, markdown)."""
    sys.stdout.write(text + end)


def out_console(**options) -> Console:
    """The stdout console for rich renderings (tables, colour); never highlights on its own."""
    from rich.console import Console

    return Console(highlight=False, **options)


def note(text: str) -> None:
    """An informational line on stderr (what was written where), never read as markup."""
    err_console().print(escape(text), soft_wrap=True)
