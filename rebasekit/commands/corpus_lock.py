"""``rebasekit corpus lock`` / ``corpus verify``: the versioned patch corpus (rebasekit.lock.json).

Registered onto the ``corpus`` sub-app of :mod:`rebasekit.commands.corpus`; the
document is built by :mod:`rebasekit.analysis.lockdoc` and read, written and diffed by
:mod:`rebasekit.corpus.lock`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rebasekit.analysis.lockdoc import build_lock
from rebasekit.atomic import write_text
from rebasekit.commands._common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    AllowIncompleteOpt,
    PatchBaseOpt,
    PluginOpt,
    emit,
    gate,
    handle_errors,
    note,
)
from rebasekit.completeness import of_inputs
from rebasekit.corpus.lock import (
    default_lock_path,
    dumps,
    lock_diff,
    project_root,
    read_lock,
)
from rebasekit.errors import InputError
from rebasekit.history.pins import pin_in
from rebasekit.history.settings import history_settings
from rebasekit.index import CodeIndex
from rebasekit.load import load_forks
from rebasekit.scan import load_corpus
from rebasekit.settings import load_project
from rebasekit.upstream import open_tree

TreeOpt = Annotated[
    str | None,
    typer.Option(
        "--vllm",
        help="Tree of the pin (folder, X.Y.Z or REPO@REF; default: the pinned version from pyproject.toml).",
    ),
]
LockOpt = Annotated[
    Path | None,
    typer.Option(
        "--lock",
        help="Lock file (default: rebasekit.lock.json next to the plugin's pyproject.toml).",
    ),
]


def _pin_spec(corpus, vllm: str | None) -> str:
    if vllm:
        return vllm
    project = load_project(project_root(corpus))
    pin = pin_in(project.project, history_settings(project).pin)
    if not pin:
        raise InputError(
            "no --vllm given and no exact vLLM pin (vllm==X.Y.Z) in the project's pyproject.toml",
            hint="pass --vllm X.Y.Z (or a folder)",
        )
    return pin


@handle_errors
def lock(
    plugin: PluginOpt = None,
    patch_base: PatchBaseOpt = None,
    vllm: TreeOpt = None,
    lock_file: LockOpt = None,
    stdout: Annotated[
        bool, typer.Option("--stdout", help="Print the lock instead of writing it.")
    ] = False,
    allow_incomplete: AllowIncompleteOpt = False,
) -> None:
    """Record every upstream surface the patches bind to, at the pin, in the lock file."""
    corpus = load_corpus(plugin, patch_base)
    index = CodeIndex(open_tree(_pin_spec(corpus, vllm)))
    text = dumps(build_lock(corpus, index, load_forks(corpus, index)))
    gate(of_inputs(corpus, [index]), allow_incomplete)  # a lock of a partial corpus would lie
    if stdout:
        emit(text.rstrip("\n"))
        return
    path = lock_file or default_lock_path(corpus)
    write_text(path, text)  # atomic: a failed write leaves the old lock whole
    note(f"wrote {path} ({index.tree.package} {index.tree.version})")


@handle_errors
def verify(
    plugin: PluginOpt = None,
    patch_base: PatchBaseOpt = None,
    vllm: TreeOpt = None,
    lock_file: LockOpt = None,
    allow_incomplete: AllowIncompleteOpt = False,
) -> None:
    """Exit 1 with a diff when the lock no longer matches the pin or the plugin code."""
    corpus = load_corpus(plugin, patch_base)
    path = lock_file or default_lock_path(corpus)
    recorded = read_lock(path)
    index = CodeIndex(open_tree(_pin_spec(corpus, vllm)))
    current = build_lock(corpus, index, load_forks(corpus, index))
    gate(of_inputs(corpus, [index]), allow_incomplete, writes=False)
    diff = lock_diff(recorded, current, path.name)
    if not diff:
        emit(f"{path.name} is current ({index.tree.package} {index.tree.version})")
        raise typer.Exit(EXIT_CLEAN)
    emit(
        f"{path.name} is stale: recorded {recorded['upstream'].get('version')}, "
        f"computed {current['upstream'].get('version')}; run `rebasekit corpus lock` after reviewing:"
    )
    emit(diff.rstrip("\n"))
    raise typer.Exit(EXIT_FINDINGS)


def register(app: typer.Typer) -> None:
    from rebasekit.commands.corpus import corpus_app

    corpus_app.command("lock")(lock)
    corpus_app.command("verify")(verify)
