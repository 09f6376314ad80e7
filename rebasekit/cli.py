"""The ``rebasekit`` command line: a thin shell over the pure analysis modules.

Each command lives in ``rebasekit/commands/<name>.py`` and exposes ``register(app)``;
this module only assembles them, so ``rebasekit --help`` lists exactly what exists.
"""

from __future__ import annotations

from typing import Annotated

import typer

from rebasekit.commands import (
    compare_pins,
    corpus,
    corpus_lock,
    diff_method,
    port,
    runbook,
    scan,
)
from rebasekit.commands._common import DEBUG_ENV, EXIT_CODES_HELP, set_debug
from rebasekit.gctune import for_syntax_trees

app = typer.Typer(
    name="rebasekit",
    help="Keep a vLLM-patching plugin alive across vLLM releases.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# One entry per command module, in help order; each module's register(app) adds its
# commands (corpus_lock adds to the sub-app that corpus registers, so it comes after it).
COMMAND_MODULES = (scan, corpus, corpus_lock, diff_method, port, compare_pins, runbook)


@app.callback()
def _options(
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", help=f"Show the traceback of an internal error (same as {DEBUG_ENV}=1)."
        ),
    ] = False,
) -> None:
    """Options common to every command."""
    set_debug(debug)
    for_syntax_trees()


def _register_all() -> None:
    for module in COMMAND_MODULES:
        module.register(app)


_register_all()


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
