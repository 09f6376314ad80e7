"""Read everything one scan needs, once, into a frozen :class:`ScanContext`.

This is the IO side of a scan: opening (and downloading) upstream trees, reading the
plugin's lock for its pin, reading fork declarations from plugin files and the project
table, opening the trees those forks were recorded at. What cannot be read becomes a
:class:`Degradation` or a recorded reason, never a silent gap. The checks then run on
the context without touching the disk or the network (beyond reading files of trees
already opened).

Only what the selected checks need is loaded (:attr:`Check.needs`), so a narrow scan
such as ``scan-imports`` neither downloads the lock's pin nor fails on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType

from rebasekit.analysis.forkdecl import ForkDecl, ForkInputs, header_decl
from rebasekit.context import ScanConfig, ScanContext, TreeOrigin
from rebasekit.corpus.locate import configured_forks
from rebasekit.corpus.lock import default_lock_path, lock_version
from rebasekit.corpus.models import PluginCorpus
from rebasekit.corpus.subpins import for_release
from rebasekit.corpus.version_gates import at_version
from rebasekit.degradation import Degradation
from rebasekit.errors import RebasekitError
from rebasekit.index import CodeIndex
from rebasekit.upstream import UpstreamTree, open_tree

NEEDS_BASE = "base"  # the tree body drift is measured from (``--from``, else the lock's pin)
NEEDS_FORKS = "forks"  # fork declarations and the trees they were recorded at

TreeInput = str | UpstreamTree | CodeIndex


def as_index(tree: TreeInput, package: str = "vllm") -> CodeIndex:
    """An index of ``tree``, opening a spec (folder, ``X.Y.Z``, ``REPO@REF``) first."""
    if isinstance(tree, CodeIndex):
        return tree
    if isinstance(tree, str):
        tree = open_tree(tree, package)
    return CodeIndex(tree)


def lock_base(corpus: PluginCorpus, new: CodeIndex) -> tuple[CodeIndex | None, list[Degradation]]:
    """The index of the lock's pin, or None when there is no lock or it pins ``new``.

    A lock that exists but cannot be read, or whose pin cannot be opened (offline, an
    unknown release), is a degradation: the drift checks that need it cannot run.
    """
    try:
        version = lock_version(corpus)
    except RebasekitError as exc:
        return None, [
            Degradation(
                "lock-unusable",
                str(default_lock_path(corpus)),
                f"{exc.message}; drift since the pin was not checked",
                exc.hint or "regenerate the lock",
            )
        ]
    if not version or version == new.tree.version:
        return None, []
    try:
        return CodeIndex(open_tree(version, new.tree.package)), []
    except RebasekitError as exc:
        return None, [
            Degradation(
                "lock-base-unavailable",
                f"{new.tree.package} {version} (the lock's pin)",
                f"{exc.message}; drift since the pin was not checked",
                exc.hint or "make the pinned release reachable, or pass --from OLD",
            )
        ]


def declared_forks(corpus: PluginCorpus) -> list[ForkDecl]:
    """Forks declared by headers in the plugin's files or in the project's pyproject table.

    Paths are relative to ``corpus.root``, the folder containing the plugin package.
    """
    root = corpus.root
    out: dict[str, ForkDecl] = {}
    for f in corpus.files:
        try:
            decl = header_decl(f.relpath, corpus.source_text(f.relpath))
        except OSError:
            continue
        if decl:
            out[f.relpath] = decl
    configured = configured_forks(root)
    if configured is not None:
        project_root, table = configured
        for key, value in table.items():
            path, _, version = value.rpartition("@")
            absolute = (project_root / key).resolve()
            try:
                rel = absolute.relative_to(root.resolve()).as_posix()
            except ValueError:
                continue
            out.setdefault(rel, ForkDecl(rel, path, version, "pyproject"))
    return sorted(out.values(), key=lambda d: d.plugin_relpath)


def load_forks(corpus: PluginCorpus, *known: CodeIndex | None) -> ForkInputs:
    """The plugin's declared forks, with the tree of each recorded version.

    A version matching one of the ``known`` indexes reuses its tree; any other is opened
    (downloaded once into the cache); one that cannot be opened keeps the reason.
    """
    decls = declared_forks(corpus)
    package = next((i.tree.package for i in known if i is not None), "vllm")
    trees: dict[str, UpstreamTree | str] = {}
    for decl in decls:
        if decl.version in trees:
            continue
        match = next((i for i in known if i is not None and i.tree.version == decl.version), None)
        if match is not None:
            trees[decl.version] = match.tree
            continue
        try:
            trees[decl.version] = open_tree(decl.version, package)
        except RebasekitError as exc:
            trees[decl.version] = exc.message
    return ForkInputs(tuple(decls), MappingProxyType(trees))


def _spec(tree: TreeInput) -> str | None:
    return tree if isinstance(tree, str) else None


def scan_context(
    corpus: PluginCorpus,
    new: TreeInput,
    old: TreeInput | None = None,
    *,
    needs: Iterable[str] = (NEEDS_BASE, NEEDS_FORKS),
    config: ScanConfig | None = None,
    new_reason: str = "given",
    old_reason: str = "given",
) -> ScanContext:
    """Open every tree a scan of ``corpus`` needs and freeze the result."""
    config = config or ScanConfig()
    needs = set(needs)
    new_index = as_index(new, config.upstream_package)
    # every check sees the plugin as it runs at the scanned release
    corpus = at_version(corpus, new_index.tree.version)
    corpus, other_pins = for_release(corpus, new_index.tree.version)
    old_index: CodeIndex | None = None
    if old is new or (isinstance(old, str) and old == new):
        old_index = new_index  # one tree named twice: indexed once, and no check runs twice on it
    elif old is not None:
        old_index = as_index(old, config.upstream_package)
    origins = [TreeOrigin("new", new_index.tree.label, _spec(new), new_reason)]
    if old_index is not None:
        origins.append(TreeOrigin("old", old_index.tree.label, _spec(old), old_reason))
    base, degradations = old_index, list(other_pins)
    if base is None and NEEDS_BASE in needs:
        base, lock_gaps = lock_base(corpus, new_index)
        degradations += lock_gaps
        if base is not None:
            origins.append(TreeOrigin("base", base.tree.label, base.tree.version, "lock pin"))
    forks = ForkInputs()
    if NEEDS_FORKS in needs:
        forks = load_forks(corpus, old_index, new_index, base)
        known = {i.tree.version for i in (old_index, new_index, base) if i is not None}
        for version, tree in sorted(forks.trees.items()):
            if isinstance(tree, UpstreamTree) and version not in known:
                origins.append(TreeOrigin("fork", tree.label, version, "fork declaration"))
    return ScanContext(
        corpus,
        new_index,
        old_index,
        base,
        forks,
        config,
        tuple(origins),
        tuple(degradations),
    )
