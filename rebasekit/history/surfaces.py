"""The upstream surfaces a plugin patches, read from one snapshot of its repository.

A surface is one upstream member the patch set replaces or captures: ``Target.attr`` for
every function-like override and every ``_orig_`` alias of a patch class. The corpus is
built from the snapshot's blobs (a commit's tree or the files on disk), so each pin
column of the ledger contributes the surfaces its own plugin code patched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rebasekit.corpus.extract import extract_file
from rebasekit.corpus.models import PluginCorpus

FUNCTION_KINDS = ("method", "property", "staticmethod", "classmethod")

# Lists the repo-relative ``.py`` files under a folder of one snapshot.
FileLister = Callable[[str], list[str]]
FileReader = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Surface:
    """``target.attr`` patched by ``patch``; ``calls_orig``: the override keeps the original."""

    target: str  # the upstream class or module, dotted through the plugin's imports
    attr: str
    patch: str  # the first patch class seen patching it
    relpath: str  # plugin file of that patch (relative to the package's parent folder)
    overrides: bool  # the patch defines the member (not only captures it)
    calls_orig: bool

    @property
    def dotted(self) -> str:
        return f"{self.target}.{self.attr}"


def package_folder(list_files: FileLister, package: str) -> str | None:
    """The snapshot folder holding ``package`` (flat or ``src/`` layout), if it has files."""
    folder = package.replace(".", "/")
    for candidate in (folder, f"src/{folder}"):
        if list_files(candidate):
            return candidate
    return None


def snapshot_corpus(
    list_files: FileLister,
    read_file: FileReader,
    package: str,
    patch_bases: tuple[str, ...],
    upstream_package: str = "vllm",
) -> PluginCorpus | None:
    """The patch corpus of ``package`` as one snapshot holds it; None when it is absent."""
    folder = package_folder(list_files, package)
    if folder is None:
        return None
    prefix = folder[: -len(package.replace(".", "/"))]  # "" or "src/"
    corpus = PluginCorpus(
        root=Path(prefix or "."),
        package=package,
        upstream_package=upstream_package,
        patch_bases=patch_bases,
    )
    for path in list_files(folder):
        if any(part.startswith(".") or part == "__pycache__" for part in path.split("/")):
            continue
        text = read_file(path)
        if text is not None:
            extract_file(corpus, path[len(prefix) :], text.encode("utf-8"))
    return corpus


def surfaces(corpus: PluginCorpus) -> list[Surface]:
    """Every upstream member the corpus's patch classes override or capture, first seen first."""
    up = corpus.upstream_package
    found: dict[str, Surface] = {}
    for patch in corpus.patches:
        target = patch.target
        if not target or not (target == up or target.startswith(up + ".")):
            continue
        members = [
            (a.name, True, bool(a.calls_orig))
            for a in patch.attributes
            if a.kind in FUNCTION_KINDS and not a.name.startswith("_orig_")
        ]
        members += [(alias.attr, False, False) for alias in patch.orig_aliases]
        for attr, overrides, calls_orig in members:
            key = f"{target}.{attr}"
            known = found.get(key)
            if known is None:
                found[key] = Surface(target, attr, patch.name, patch.relpath, overrides, calls_orig)
            elif overrides or calls_orig:
                found[key] = Surface(
                    target,
                    attr,
                    known.patch,
                    known.relpath,
                    known.overrides or overrides,
                    known.calls_orig or calls_orig,
                )
    return list(found.values())
