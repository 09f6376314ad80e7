"""``rebasekit port``: three-way merge upstream drift into the plugin's copies of upstream code."""

from __future__ import annotations

from typing import Annotated

import typer

from rebasekit.analysis.portplan import patch_text, plan_files, plan_port
from rebasekit.commands._common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    AllowIncompleteOpt,
    PatchBaseOpt,
    PluginOpt,
    emit,
    gate,
    handle_errors,
    out_console,
)
from rebasekit.commands.portwrite import refuse_conflict_markers, write_port
from rebasekit.completeness import of_inputs
from rebasekit.corpus.lock import default_lock_path, read_lock
from rebasekit.errors import InputError
from rebasekit.index import CodeIndex
from rebasekit.load import load_forks
from rebasekit.scan import load_corpus
from rebasekit.upstream import open_tree


@handle_errors
def port(
    to: Annotated[
        str, typer.Option("--to", help="NEW tree (folder, X.Y.Z or REPO@REF) to port to.")
    ],
    from_: Annotated[
        str | None,
        typer.Option(
            "--from", help="OLD tree the copies were taken from (default: the lock's pin)."
        ),
    ] = None,
    plugin: PluginOpt = None,
    patch_base: PatchBaseOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the patch; write nothing.")
    ] = False,
    skip_conflicts: Annotated[
        bool,
        typer.Option(
            "--skip-conflicts",
            help="Write only clean merges; list conflicting ones with both sides.",
        ),
    ] = False,
    allow_incomplete: AllowIncompleteOpt = False,
    force: Annotated[
        bool, typer.Option("--force", help="Write even into files with uncommitted git changes.")
    ] = False,
) -> None:
    """Merge upstream's OLD→NEW changes into copied overrides and forked files.

    Writes all files or none (staged, then renamed), keeps each file's encoding and line
    endings, and copies the originals into .rebasekit-backup/ beside the plugin first.
    Refuses files with uncommitted git changes (unless --force) and plugin files that still
    hold conflict markers. Exit 0 when everything merged cleanly (or nothing drifted), 1
    when conflicts remain, 2 when it refused.
    """
    corpus = load_corpus(plugin, patch_base)
    refuse_conflict_markers(corpus.root, [f.relpath for f in corpus.files])
    if from_ is None:
        path = default_lock_path(corpus)
        if not path.is_file():
            raise InputError(
                "no --from given and no lock file to take the old pin from",
                hint=f"pass --from OLD or create {path.name} with `rebasekit corpus lock`",
            )
        from_ = read_lock(path)["upstream"]["version"]
    old, new = CodeIndex(open_tree(from_)), CodeIndex(open_tree(to))
    plan = plan_port(corpus, old, new, load_forks(corpus, old, new))
    gate(of_inputs(corpus, [old, new]), allow_incomplete)  # before anything is written
    console = out_console(soft_wrap=True)
    files = plan_files(corpus, plan, include_conflicts=not skip_conflicts)
    for line in plan.skipped:
        console.print(f"[yellow]skipped[/yellow] {line}")
    for item in plan.items:
        state = (
            f"[red]{item.conflicts} conflict(s)[/red]" if item.conflicts else "[green]clean[/green]"
        )
        console.print(f"{item.kind} {item.relpath} {item.name}: {state}")
        if item.conflicts and skip_conflicts:
            console.print(
                f"--- ours (plugin) ---\n{item.ours}--- theirs (upstream {new.tree.version}) ---\n"
                f"{item.theirs}--- base (upstream {old.tree.version}) ---\n{item.base}",
                markup=False,
            )
    if not plan.items:
        console.print(
            f"nothing to port: no copied override or fork drifted between {old.tree.version} and {new.tree.version}"
        )
    if dry_run:
        emit(patch_text(files))
    else:
        if files:
            report = write_port(corpus.root, files, force=force)
            console.print(f"wrote {len(files)} file(s); originals kept in {report.backup}")
            if not report.in_git:
                console.print(
                    f"{corpus.root} is not in a git repository: the backup folder is the only copy of the originals"
                )
            console.print(f"after review, bump the pin and run `rebasekit corpus lock --vllm {to}`")
    raise typer.Exit(EXIT_FINDINGS if plan.conflicts else EXIT_CLEAN)


def register(app: typer.Typer) -> None:
    app.command("port")(port)
