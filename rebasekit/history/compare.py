"""``compare-pins`` as one pure call: repository + options in, :class:`Ledger` out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from rebasekit.degradation import Degradation
from rebasekit.errors import InputError
from rebasekit.history.columns import (
    ColumnBuilder,
    find_branches,
    has_commits,
    open_repo,
    order_columns,
)
from rebasekit.history.ledger import Ledger, build_ledger
from rebasekit.history.probes import Probe, load_probes
from rebasekit.history.settings import HistorySettings, load_settings

PIN_ONLY = [Probe(label="vLLM pin", kind="pin", target="pin")]


@dataclass(frozen=True)
class CompareOptions:
    history: str | None = None  # REF whose first-parent history is mined; None = branches only
    include_worktree: bool = False
    probes: Path | None = None  # None = the configured file, or just the pin when it is absent
    branch_globs: tuple[str, ...] | None = None  # None = configured globs
    exclude: tuple[str, ...] = ()  # repo-relative files never counted as a change (the output)


def _main_name(repo: git.Repo, branches: dict[str, str], wanted: str) -> tuple[str, str]:
    """The main branch and its ref; falls back to the checked-out branch, then HEAD."""
    if wanted in branches:
        return wanted, branches[wanted]
    try:
        active = repo.active_branch
        return active.name, active.path
    except TypeError:  # detached HEAD
        return "HEAD", "HEAD"


def _probes(root: Path, settings: HistorySettings, explicit: Path | None) -> list[Probe]:
    if explicit is not None:
        return load_probes(explicit)
    default = root / settings.probes
    return load_probes(default) if default.is_file() else PIN_ONLY


def shallow_clone(repo: git.Repo) -> Degradation | None:
    """A shallow clone (most CI checkouts) lacks the commits that declared older pins."""
    try:
        shallow = repo.git.rev_parse("--is-shallow-repository").strip() == "true"
    except git.GitCommandError:
        shallow = (Path(repo.git_dir) / "shallow").is_file()
    if not shallow:
        return None
    return Degradation(
        "shallow-history",
        str(repo.working_tree_dir),
        "the repository is a shallow clone: commits and pins before its depth are missing",
        "run `git fetch --unshallow` (or check out with full history, e.g. fetch-depth: 0)",
    )


def compare_pins(path: Path, options: CompareOptions) -> Ledger:
    """Build the ledger for the repository at ``path`` (see the module docs of the parts)."""
    repo = open_repo(path)
    if not has_commits(repo):
        raise InputError(
            f"{repo.working_tree_dir} has no commits yet",
            hint="compare-pins reads pins from commits; commit first",
        )
    root = Path(repo.working_tree_dir or path)
    settings = load_settings(root)
    probes = _probes(root, settings, options.probes)
    globs = options.branch_globs if options.branch_globs is not None else settings.branch_globs
    watched = tuple(f for p in probes for f in p.files() if f not in options.exclude)
    builder = ColumnBuilder(repo, settings.pin, watched)
    found = find_branches(repo, globs, settings.main_branch)
    main, main_ref = _main_name(repo, found, settings.main_branch)
    found.setdefault(main, main_ref)
    branches = [builder.branch(name, ref) for name, ref in sorted(found.items())]
    # a branch whose pyproject does not parse has an unknown pin, not "no pin": leave it out
    branches = [b for b in branches if not builder.unreadable(b.snapshot)]
    commits = (
        builder.history(main_ref if options.history == "" else options.history)
        if options.history is not None
        else []
    )
    worktree = builder.worktree() if options.include_worktree else None
    ledger = build_ledger(order_columns(branches, commits, worktree, main), probes)
    shallow = shallow_clone(repo)
    ledger.degradations = list(dict.fromkeys(([shallow] if shallow else []) + builder.degradations))
    return ledger
