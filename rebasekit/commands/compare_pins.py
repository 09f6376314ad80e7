"""``rebasekit compare-pins``: the pin evolution ledger (thin shell over rebasekit.history)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperCommand

from rebasekit.atomic import check_replaceable, write_generated
from rebasekit.commands._common import (
    AllowIncompleteOpt,
    PatchBaseOpt,
    emit,
    handle_errors,
    note,
    out_console,
    pin_tree_pairs,
    verdict,
    warn_degradations,
)
from rebasekit.history.compare import CompareOptions, compare_pins
from rebasekit.history.ledger import FLAG_RULES, MIN_PRIOR_BUMPS
from rebasekit.history.render import dumps, print_table, to_markdown

_RULES = "\n\n".join(f"{code}: {rule}." for code, rule in FLAG_RULES.items())

HELP = " ".join(
    [
        "Ledger of what changed with each vLLM pin the plugin has declared.\n\n"
        "Columns are pins: the main branch and every rebase branch (globs from"
        " \\[tool.rebasekit] rebase-branches, default rebase/vllm_v*, local or remote), each"
        " read at its tip. --history [REF] also mines REF's first-parent history (default: the"
        " main branch) for the first commit that declared each pin, so pins whose branch is"
        " gone still show; a branch wins over a commit with the same pin. --include-worktree"
        " adds the files on disk, placed by their pin. The pin comes from the pyproject extra"
        " (pin-extra, default vllm), else from the code constant (pin-constant PATH:NAME).\n\n"
        "Rows are probes from probes/evolution_probes.toml (or --probes FILE, TOML or JSON)."
        " Without a probe file (or with --derive) rows are also derived from the patch corpus:"
        " for every upstream member the plugin's patches override or capture, its upstream"
        " signature at each column's pin (vLLM release downloaded once, or --tree PIN=SPEC),"
        " and for overrides that copy the upstream body, the body's fingerprint.\n\n"
        "Anomaly flags (advisory) are computed in pin order, columns of one pin counted once"
        " (the rightmost), a bump being the step from one pin to the next; STALLED needs at"
        f" least {MIN_PRIOR_BUMPS} earlier bumps.\n\n{_RULES}\n\n"
        "Exit code: 0 no flag raised, 1 at least one flag, 2 bad input or an incomplete ledger (a shallow"
        " clone, a revision whose pyproject does not parse; see --allow-incomplete), 3 internal error."
    ]
)


class _OptionalHistory(TyperCommand):
    """Lets ``--history`` stand alone (meaning: the main branch) or take a REF."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        fixed: list[str] = []
        for i, arg in enumerate(args):
            nxt = args[i + 1] if i + 1 < len(args) else None
            if arg == "--history" and (nxt is None or nxt.startswith("-")):
                fixed.append("--history=")
            else:
                fixed.append(arg)
        return super().parse_args(ctx, fixed)


def _derive_args(
    derive: bool | None, plugin: str | None, bases: list[str], trees: list[str]
) -> list[str]:
    """The derivation options as typed, for the command line the markdown ledger records."""
    parts = [] if derive is None else ["--derive" if derive else "--no-derive"]
    parts += ["--plugin", plugin] if plugin else []
    for base in bases:
        parts += ["--patch-base", base]
    for item in trees:
        parts += ["--tree", item]
    return parts


def _command_line(
    history: str | None,
    worktree: bool,
    probes: Path | None,
    patterns: list[str],
    write: str,
    derived: list[str] | None = None,
) -> str:
    parts = ["rebasekit", "compare-pins"]
    if history is not None:
        parts += ["--history"] + ([history] if history else [])
    if worktree:
        parts.append("--include-worktree")
    if probes is not None:
        parts += ["--probes", str(probes)]
    for pattern in patterns:
        parts += ["--branch-pattern", pattern]
    return shlex.join(parts + (derived or []) + ["--write", write])


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


@handle_errors
def compare_pins_cmd(
    repo: Annotated[Path, typer.Option("--repo", help="The plugin's git checkout.")] = Path("."),
    history: Annotated[
        str | None,
        typer.Option(
            "--history",
            metavar="[REF]",
            help="Also mine REF's first-parent history for pin bumps (REF defaults to main).",
        ),
    ] = None,
    include_worktree: Annotated[
        bool, typer.Option("--include-worktree", help="Add the working tree as a column.")
    ] = False,
    probes: Annotated[
        Path | None, typer.Option("--probes", help="Probe file (TOML or JSON).")
    ] = None,
    branch_pattern: Annotated[
        list[str] | None,
        typer.Option(
            "--branch-pattern", help="Glob for rebase branches (repeatable; overrides config)."
        ),
    ] = None,
    write: Annotated[
        Path | None, typer.Option("--write", help="Write the markdown ledger here.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the ledger as JSON.")] = False,
    derive: Annotated[
        bool | None,
        typer.Option(
            "--derive/--no-derive",
            help="Add rows derived from the patch corpus (default: only when no probe file is in force).",
        ),
    ] = None,
    plugin: Annotated[
        str | None,
        typer.Option(
            "--plugin",
            help="Plugin import name for derived rows (default: \\[tool.rebasekit] plugin, else the"
            " package of the vllm.general_plugins entry point).",
        ),
    ] = None,
    patch_base: PatchBaseOpt = None,
    tree: Annotated[
        list[str] | None,
        typer.Option(
            "--tree",
            metavar="PIN=SPEC",
            help="Upstream tree for one pin (folder or REPO@REF) instead of the downloaded release (repeatable).",
        ),
    ] = None,
    allow_incomplete: AllowIncompleteOpt = False,
    force: Annotated[
        bool, typer.Option("--force", help="Let --write replace a file rebasekit did not generate.")
    ] = False,
) -> None:
    if write is not None:
        check_replaceable(write, "--write", force)
    branch_pattern = branch_pattern or []
    root = repo.resolve()
    write_rel = _relative(write, root) if write else None
    options = CompareOptions(
        history=history,
        include_worktree=include_worktree,
        probes=probes,
        branch_globs=tuple(branch_pattern) if branch_pattern else None,
        exclude=(write_rel,) if write_rel else (),
        derive=derive,
        plugin=plugin,
        patch_bases=tuple(patch_base or ()),
        trees=pin_tree_pairs(tree, "--tree"),
    )
    ledger = compare_pins(root, options)
    incomplete = bool(ledger.degradations) and not allow_incomplete
    if (
        write is not None and not incomplete
    ):  # an incomplete ledger is never committed as the record
        shown = write.as_posix() if not write.is_absolute() else (write_rel or str(write))
        command = _command_line(
            history,
            include_worktree,
            probes,
            branch_pattern,
            shown,
            _derive_args(derive, plugin, patch_base or [], tree or []),
        )
        write_generated(write, to_markdown(ledger, command))
    if as_json:
        emit(dumps(ledger))
    else:
        print_table(ledger, out_console(width=max(out_console().width, 100)))
        if write is not None and not incomplete:
            emit(f"wrote {write}")
    for line in ledger.notes:
        note(line)
    warn_degradations(ledger.degradations)
    raise typer.Exit(verdict(bool(ledger.flags), ledger.degradations, allow_incomplete))


def register(app: typer.Typer) -> None:
    app.command("compare-pins", help=HELP, cls=_OptionalHistory)(compare_pins_cmd)
