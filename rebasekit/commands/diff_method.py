"""``rebasekit diff-method``: the upstream diff of one method, function or class between two trees."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.syntax import Syntax

from rebasekit.analysis.bodies import unified
from rebasekit.analysis.overrides import symbol_definition
from rebasekit.commands._common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    AllowIncompleteOpt,
    emit,
    gate,
    handle_errors,
    out_console,
)
from rebasekit.completeness import of_inputs
from rebasekit.errors import InputError
from rebasekit.index import CodeIndex
from rebasekit.upstream import open_tree


def definition_text(index: CodeIndex, dotted: str) -> tuple[str, str] | None:
    """(label, dedented source) of ``dotted`` in ``index`` (a class member found along the MRO)."""
    sym = index.resolve(dotted)
    if sym is None and "." in dotted:
        owner = index.resolve(dotted.rsplit(".", 1)[0])
        if owner is not None and owner.kind == "class":
            sym = index.lookup_member(owner, dotted.rsplit(".", 1)[1])
    if sym is None or sym.kind not in ("function", "class"):
        return None
    d = symbol_definition(sym)
    return (f"{sym.relpath}:{sym.lineno} ({sym.qualname})", d.source) if d else None


@handle_errors
def diff_method(
    target: Annotated[
        str,
        typer.Argument(
            help="Dotted name, e.g. vllm.v1.worker.gpu_model_runner.GPUModelRunner.execute_model"
        ),
    ],
    from_: Annotated[str, typer.Option("--from", help="OLD tree (folder, X.Y.Z or REPO@REF).")],
    to: Annotated[str, typer.Option("--to", help="NEW tree (folder, X.Y.Z or REPO@REF).")],
    plain: Annotated[
        bool, typer.Option("--unified", help="Plain unified diff, no colour.")
    ] = False,
    allow_incomplete: AllowIncompleteOpt = False,
) -> None:
    """Print how upstream changed one definition (exit 0 unchanged, 1 changed, 2 bad input or incomplete, 3 bug)."""
    old, new = CodeIndex(open_tree(from_)), CodeIndex(open_tree(to))
    a, b = definition_text(old, target), definition_text(new, target)
    gate(of_inputs(None, [old, new]), allow_incomplete, writes=False)
    if a is None and b is None:
        raise InputError(
            f"{target} is neither a function nor a class in {old.tree.label} or {new.tree.label}",
            hint="give the dotted name where it is defined, e.g. vllm.module.Class.method",
        )
    old_label = f"{old.tree.version}: {a[0]}" if a else f"{old.tree.version}: (absent)"
    new_label = f"{new.tree.version}: {b[0]}" if b else f"{new.tree.version}: (absent)"
    text = unified(a[1] if a else "", b[1] if b else "", old_label, new_label)
    if not text:
        emit(f"{target}: unchanged between {old.tree.version} and {new.tree.version}")
        raise typer.Exit(EXIT_CLEAN)
    if plain:
        emit(text.rstrip("\n"))
    else:
        out_console().print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
    raise typer.Exit(EXIT_FINDINGS)


def register(app: typer.Typer) -> None:
    app.command("diff-method")(diff_method)
