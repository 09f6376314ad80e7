"""``rebasekit corpus show``: what the plugin patches, imports and calls upstream."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from rebasekit.checks.targets import resolve_target, target_member
from rebasekit.commands._common import (
    AllowIncompleteOpt,
    PatchBaseOpt,
    PluginOpt,
    emit,
    handle_errors,
    out_console,
    verdict,
    warn_degradations,
)
from rebasekit.completeness import of_inputs
from rebasekit.index import CodeIndex, Status
from rebasekit.scan import load_corpus
from rebasekit.upstream import open_tree

corpus_app = typer.Typer(help="Inspect the plugin's patch corpus.", no_args_is_help=True)


@corpus_app.command("show")
@handle_errors
def show(
    plugin: PluginOpt = None,
    patch_base: PatchBaseOpt = None,
    vllm: Annotated[
        str | None,
        typer.Option(
            "--vllm",
            help="Tree (folder, X.Y.Z or REPO@REF) to tell replaced from added attributes.",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    allow_incomplete: AllowIncompleteOpt = False,
) -> None:
    """List patch classes, their targets and attributes, upstream imports and calls.

    Exit 0 when the listing is complete; 2 when part of the plugin or tree could not be
    read (the listing is still printed, with a warning per gap) unless --allow-incomplete.
    """
    degradations = _show(plugin, patch_base, vllm, json_out)
    raise typer.Exit(verdict(False, degradations, allow_incomplete))


def _show(plugin, patch_base, vllm, json_out: bool) -> list:
    corpus = load_corpus(plugin, patch_base)
    index = CodeIndex(open_tree(vllm)) if vllm else None
    actions: dict[tuple[str, str], str] = {}
    if index is not None:
        for patch in corpus.patches:
            res = resolve_target(index, patch)
            for attr in patch.attributes:
                if res is None or not res.found or res.symbol is None:
                    actions[(patch.relpath, patch.name, attr.name)] = "target-missing"
                    continue
                st = target_member(index, res.symbol, attr.name).status
                actions[(patch.relpath, patch.name, attr.name)] = {
                    Status.FOUND: "replaces",
                    Status.DYNAMIC: "unknown",
                }.get(st, "adds")
    degradations = list(of_inputs(corpus, [index]))
    warn_degradations(degradations)  # stderr: the listing below may be partial
    if json_out:
        data = corpus.to_dict()
        for patch in data["patches"]:
            for attr in patch["attributes"]:
                attr["action"] = actions.get((patch["relpath"], patch["name"], attr["name"]))
        emit(json.dumps(data, indent=2, default=str))
        return degradations
    console = out_console()
    console.print(
        f"[bold]{corpus.package}[/bold]: {len(corpus.files)} files, {len(corpus.patches)} patches, "
        f"{len(corpus.imports)} upstream imports, {len(corpus.calls)} upstream calls; "
        f"patch bases: {', '.join(corpus.patch_bases) or '(discovered)'}; "
        f"by rule: {', '.join(f'{r} {n}' for r, n in corpus.patch_counts().items()) or '(none)'}"
    )
    for f in corpus.files:
        if f.syntax_error:
            console.print(
                f"[red]{f.relpath}:{f.error_line}: does not parse: {f.syntax_error}[/red]"
            )
    table = Table(title="patches", title_justify="left")
    for col in ("patch", "rule", "target", "attribute", "kind", "action", "_orig_ aliases"):
        table.add_column(col, overflow="fold")
    for patch in corpus.patches:
        aliases = ", ".join(f"{a.alias}→{a.attr}" for a in patch.orig_aliases)
        rows = patch.attributes or [None]
        for i, attr in enumerate(rows):
            table.add_row(
                f"{patch.name} ({patch.relpath}:{patch.lineno})" if i == 0 else "",
                patch.rule if i == 0 else "",
                (patch.target or f"? {patch.target_expr}") if i == 0 else "",
                attr.name if attr else "",
                attr.kind if attr else "",
                actions.get((patch.relpath, patch.name, attr.name), "") if attr else "",
                aliases if i == 0 else "",
            )
    console.print(table)
    imports = Table(title="upstream imports", title_justify="left")
    for col in ("file:line", "import", "guard"):
        imports.add_column(col, overflow="fold")
    for imp in corpus.imports:
        text = f"from {imp.module} import {imp.name}" if imp.name else f"import {imp.module}"
        if imp.alias not in (imp.name, imp.module.split(".")[0], "*"):
            text += f" as {imp.alias}"
        imports.add_row(f"{imp.relpath}:{imp.lineno}", text, imp.guard or "")
    console.print(imports)
    calls = Table(title="upstream calls", title_justify="left")
    for col in ("file:line", "callee", "args", "via"):
        calls.add_column(col, overflow="fold")
    for call in corpus.calls:
        shape = [f"{call.positional} positional"] + [f"{k}=" for k in call.keywords]
        shape += ["*args"] if call.star_args else []
        shape += ["**kwargs"] if call.star_kwargs else []
        calls.add_row(
            f"{call.relpath}:{call.lineno}", call.callee, ", ".join(shape), call.via_orig or ""
        )
    console.print(calls)
    return degradations


def register(app: typer.Typer) -> None:
    app.add_typer(corpus_app, name="corpus")
