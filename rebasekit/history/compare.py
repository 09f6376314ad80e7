"""``compare-pins`` as one pure call: repository + options in, :class:`Ledger` out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from rebasekit.degradation import Degradation
from rebasekit.errors import InputError, SettingsError
from rebasekit.history.columns import (
    ColumnBuilder,
    find_branches,
    has_commits,
    open_repo,
    order_columns,
)
from rebasekit.history.derived import (
    DERIVED_KINDS,
    DeriveSpec,
    UpstreamAt,
    derive_probes,
    derived_cell,
)
from rebasekit.history.ledger import Ledger, build_ledger, file_cell
from rebasekit.history.probes import Cell, Probe, load_probes
from rebasekit.history.settings import HistorySettings, load_settings
from rebasekit.settings import load_project

PIN_ONLY = [Probe(label="vLLM pin", kind="pin", target="pin")]


@dataclass(frozen=True)
class CompareOptions:
    history: str | None = None  # REF whose first-parent history is mined; None = branches only
    include_worktree: bool = False
    probes: Path | None = None  # None = the configured file, or just the pin when it is absent
    branch_globs: tuple[str, ...] | None = None  # None = configured globs
    exclude: tuple[str, ...] = ()  # repo-relative files never counted as a change (the output)
    # Rows derived from the patch corpus: None = only when no probe file is in force.
    derive: bool | None = None
    plugin: str | None = None  # the plugin's import name; None = from the project settings
    patch_bases: tuple[str, ...] = ()  # () = [tool.rebasekit] patch-bases
    trees: tuple[tuple[str, str], ...] = ()  # (pin, tree spec) used instead of the release


def _main_name(repo: git.Repo, branches: dict[str, str], wanted: str) -> tuple[str, str]:
    """The main branch and its ref; falls back to the checked-out branch, then HEAD."""
    if wanted in branches:
        return wanted, branches[wanted]
    try:
        active = repo.active_branch
        return active.name, active.path
    except TypeError:  # detached HEAD
        return "HEAD", "HEAD"


def _probes(root: Path, settings: HistorySettings, explicit: Path | None) -> list[Probe] | None:
    """The probe file in force (``--probes``, else the configured one); None when there is none."""
    if explicit is not None:
        return load_probes(explicit)
    default = root / settings.probes
    return load_probes(default) if default.is_file() else None


def derive_spec(root: Path, options: CompareOptions) -> tuple[DeriveSpec | None, str | None]:
    """What derivation needs from the project, or None and the reason it cannot run."""
    project = load_project(root)
    try:
        package = options.plugin or project.plugin
    except SettingsError as exc:
        return None, f"no rows derived from the patch corpus: {exc.message} (pass --plugin NAME)"
    if not package:
        return None, (
            "no rows derived from the patch corpus: the plugin package is unknown "
            "(pass --plugin NAME, or declare a vllm.general_plugins entry point)"
        )
    bases = options.patch_bases or project.tool.patch_base_names or ()
    return DeriveSpec(package, tuple(bases), dict(options.trees)), None


# Missing-cell reasons that say the member is not upstream, as opposed to unknown.
_ABSENT = ("not upstream", "no target")


def _plugin_only(cells: dict[str, Cell]) -> bool:
    """A derived row with no upstream value at any pin: a member the plugin adds itself."""
    return all(c.missing and c.why in _ABSENT for c in cells.values())


def _cell_for(upstream: UpstreamAt | None):
    def cell(probe: Probe, column) -> Cell:
        if probe.kind in DERIVED_KINDS:
            assert upstream is not None
            return derived_cell(probe, column, upstream)
        return file_cell(probe, column)

    return cell


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
    configured = _probes(root, settings, options.probes)
    probes = configured if configured is not None else list(PIN_ONLY)
    globs = options.branch_globs if options.branch_globs is not None else settings.branch_globs
    derive = options.derive if options.derive is not None else configured is None
    spec, why = derive_spec(root, options) if derive else (None, None)
    watched = tuple(f for p in probes for f in p.files() if f not in options.exclude)
    if spec is not None:  # derived rows read the plugin package: a change there counts
        folder = spec.package.replace(".", "/")
        watched += (folder, f"src/{folder}")
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
    columns = order_columns(branches, commits, worktree, main)
    upstream, notes = None, []
    if derive:
        if spec is None:
            notes.append(why or "")
        else:
            upstream = UpstreamAt(spec)
            derived = derive_probes(columns, spec, upstream)
            probes = probes + derived
            if not derived:
                notes.append(
                    f"no rows derived from the patch corpus: no patch of {spec.package} "
                    "targets an upstream member"
                    + ("" if spec.patch_bases else " (no patch base known: pass --patch-base NAME)")
                )
    ledger = build_ledger(columns, probes, _cell_for(upstream))
    own = [r for r in ledger.rows if r.probe.kind in DERIVED_KINDS and _plugin_only(r.cells)]
    if own:
        ledger.rows = [r for r in ledger.rows if r not in own]
        names = ", ".join(
            r.probe.target.rsplit(".", 2)[-2] + "." + r.probe.target.rsplit(".", 1)[-1] for r in own
        )
        notes.append(
            f"{len(own)} patched member(s) exist upstream at no pin (the plugin's own), left out: {names}"
        )
    ledger.notes = notes
    shallow = shallow_clone(repo)
    upstream_gaps = upstream.degradations if upstream else []
    ledger.degradations = list(
        dict.fromkeys(([shallow] if shallow else []) + builder.degradations + upstream_gaps)
    )
    return ledger
