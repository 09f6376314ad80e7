"""Turn a tree spec from the command line into an :class:`UpstreamTree`.

A spec is told apart by its form: an existing folder is a folder tree (either the
package folder itself or the folder containing it); ``REPO@REF`` whose left side is an
existing folder is a git tree; something shaped like ``0.27.0`` is a registry version.
"""

from __future__ import annotations

import re
from pathlib import Path

from rebasekit.errors import TreeNotFoundError
from rebasekit.upstream.tree import FolderTree, GitTree, UpstreamTree

_VERSION_FORM = re.compile(r"^v?\d+(\.\d+){1,3}([a-z]+\d*)?(\.post\d+|\.dev\d+)?$", re.I)


def open_tree(spec: str, package: str = "vllm") -> UpstreamTree:
    """Open a folder path, a version ``X.Y.Z`` or ``REPO@REF`` (see module docstring)."""
    text = spec.strip()
    path = Path(text).expanduser()
    if path.is_dir():
        return open_folder(path, package)
    if "@" in text:
        repo, _, ref = text.rpartition("@")
        if repo and ref and Path(repo).expanduser().is_dir():
            return GitTree(Path(repo).expanduser(), ref, package)
        if repo and ref and not _VERSION_FORM.match(text):
            raise TreeNotFoundError(
                f"no git repository at {repo!r} (from {spec!r})",
                hint="REPO@REF needs a local clone, e.g. ~/src/vllm@v0.27.0",
            )
    if _VERSION_FORM.match(text):
        from rebasekit.upstream.wheels import version_tree

        return version_tree(text.lstrip("vV"), package)
    raise TreeNotFoundError(
        f"{spec!r} is not a folder, a version or REPO@REF",
        hint=f"give the '{package}' package folder, a release like 0.27.0, or a git clone as REPO@REF",
    )


def open_folder(path: Path, package: str = "vllm") -> FolderTree:
    """A folder tree from the package folder itself or the folder that contains it."""
    path = path.resolve()
    if (path / "__init__.py").is_file() and path.name == package:
        return FolderTree(path.parent, package, label=str(path))
    if (path / package / "__init__.py").is_file():
        return FolderTree(path, package, label=str(path / package))
    raise TreeNotFoundError(
        f"{path} is not a '{package}' package folder (no {package}/__init__.py there)",
        hint=f"point at the '{package}' folder itself or at the folder that contains it",
    )
