"""Read-only views of an upstream source tree, whatever it came from.

Paths are always relative to the *tree root*: the folder that contains the package
directory (the ``sys.path`` entry), so a module ``vllm.v1.core`` lives at
``vllm/v1/core/__init__.py`` or ``vllm/v1/core.py``. Folder trees and git trees offer the
same four operations, so the index never knows where the source came from.
"""

from __future__ import annotations

import hashlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path

from packaging.utils import canonicalize_name

from rebasekit.degradation import Degradation
from rebasekit.errors import GitRefError
from rebasekit.gitref import verify_commit
from rebasekit.sourcefile import (
    MAX_SOURCE_BYTES,
    SkippedFile,
    decode_source,
    read_source_bytes,
    source_problem,
)

_VERSION_RE = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*["']([^"']+)["']""", re.M)


class UpstreamTree(ABC):
    """An upstream package's sources: ``package`` is the top-level import name (``vllm``)."""

    package: str
    version: str | None
    label: str
    degradations: list[Degradation]  # files skipped (not regular, dangling, over the size cap)

    @abstractmethod
    def read_bytes(self, relpath: str) -> bytes:
        """Raw content of a file; raises ``FileNotFoundError`` if absent."""

    @abstractmethod
    def exists(self, relpath: str) -> bool:
        """Whether ``relpath`` is a file of the tree."""

    @abstractmethod
    def iter_py_files(self) -> Iterator[str]:
        """Every ``.py`` file of the package, as a relpath, in a stable order."""

    @property
    def fingerprint(self) -> str | None:
        """A digest that changes whenever the tree's content does (keys tree-derived caches)."""
        return None

    def read_text(self, relpath: str) -> str:
        """The file's text as Python decodes it (coding cookie, BOM)."""
        return decode_source(self.read_bytes(relpath))

    def content_hash(self, relpath: str) -> str:
        return hashlib.sha256(self.read_bytes(relpath)).hexdigest()

    def module_to_path(self, modname: str) -> str | None:
        """Relpath of the file defining ``modname`` (package ``__init__`` first), or None."""
        base = modname.replace(".", "/")
        for candidate in (f"{base}/__init__.py", f"{base}.py"):
            if self.exists(candidate):
                return candidate
        return None

    def path_to_module(self, relpath: str) -> str:
        parts = relpath[:-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)

    def is_package(self, modname: str) -> bool:
        return self.exists(modname.replace(".", "/") + "/__init__.py")

    def _version_from_sources(self) -> str | None:
        for rel in (
            f"{self.package}/_version.py",
            f"{self.package}/version.py",
            f"{self.package}/__init__.py",
        ):
            if self.exists(rel):
                match = _VERSION_RE.search(self.read_text(rel))
                if match:
                    return match.group(1)
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label}>"


class FolderTree(UpstreamTree):
    """A tree on disk; ``root`` contains the package folder."""

    def __init__(
        self,
        root: Path,
        package: str,
        version: str | None = None,
        label: str | None = None,
        *,
        files: list[str] | None = None,
        fingerprint: str | None = None,
    ):
        self.root = root
        self.package = package
        self.label = label or str(root / package)
        # A verified release tree passes its manifest's file list and content digest, so
        # neither the folder walk nor the stat fingerprint below is ever needed for it.
        self._files: list[str] | None = sorted(files) if files is not None else None
        self._fingerprint = fingerprint
        self.degradations = []
        self.version = version or _metadata_version(root, package) or self._version_from_sources()

    @property
    def fingerprint(self) -> str:
        """Manifest digest for release trees; else a digest of every file's path, size, mtime.

        Hashing the contents of a 2000-file tree on every run would cost more than the
        searches the fingerprint lets us skip; size + nanosecond mtime changes on any edit.
        """
        if self._fingerprint is None:
            digest = hashlib.sha256(str(self.root.resolve()).encode())
            for rel in self.iter_py_files():
                st = (self.root / rel).stat()
                digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
            self._fingerprint = "stat-" + digest.hexdigest()
        return self._fingerprint

    def read_bytes(self, relpath: str) -> bytes:
        """Raises :class:`~rebasekit.sourcefile.SkippedFile` for anything but a regular file under the cap."""
        return read_source_bytes(self.root / relpath)

    def exists(self, relpath: str) -> bool:
        """A ``.py`` entry that is not a readable file still exists (reading it is then
        skipped with a warning), so its names read as unknowable, never as missing."""
        path = self.root / relpath
        return path.is_file() or (relpath.endswith(".py") and os.path.lexists(path))

    def iter_py_files(self) -> Iterator[str]:
        if self._files is None:
            pkg = self.root / self.package
            files = []
            for path in sorted(pkg.rglob("*.py")):
                rel = path.relative_to(self.root).as_posix()
                problem = source_problem(path)
                if problem is None:
                    files.append(rel)
                else:
                    self._skip(rel, problem)
            self._files = files
        return iter(self._files)

    def _skip(self, rel: str, problem: str) -> None:
        self.degradations.append(SkippedFile(f"{self.label}: {rel}", problem).degradation())


def _metadata_version(root: Path, package: str) -> str | None:
    """The version in the ``*.dist-info`` metadata that a wheel unpacks beside its package."""
    import importlib.metadata  # only a folder tree without a manifest reads its metadata

    wanted = canonicalize_name(package)
    for folder in sorted(root.glob("*.dist-info")):
        dist = importlib.metadata.PathDistribution(folder)
        try:
            name = dist.metadata["Name"]
        except (OSError, UnicodeDecodeError):
            continue  # an unreadable METADATA states no version
        if name and canonicalize_name(name) == wanted:
            return dist.version
    return None


class GitTree(UpstreamTree):
    """A tree read from a git commit's object database (no worktree is touched)."""

    def __init__(self, repo_path: Path, ref: str, package: str):
        import git  # gitpython: imported lazily, only git specs need it

        try:
            repo = git.Repo(repo_path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise GitRefError(
                f"{repo_path} is not a git repository",
                hint="give REPO@REF with REPO a local clone, e.g. ~/src/vllm@v0.27.0",
            ) from exc
        try:
            commit = repo.commit(verify_commit(repo_path, ref))
        except (git.BadName, ValueError, git.GitCommandError) as exc:
            raise GitRefError(
                f"no ref {ref!r} in {repo_path}",
                hint="use a tag, branch or commit that exists there (git -C REPO tag --list)",
            ) from exc
        self.commit = commit.hexsha
        self.package = package
        self.label = f"{repo_path}@{ref}"
        self._blobs: dict[str, object] = {}
        self._skipped: dict[
            str, str
        ] = {}  # relpath -> why it is not read (its names stay unknowable)
        self.degradations = []
        try:
            pkg_tree = commit.tree / package
        except (KeyError, ValueError) as exc:
            raise GitRefError(
                f"{self.label} has no top-level '{package}' folder",
                hint="REPO must be the root of a checkout whose package folder sits at the top",
            ) from exc
        try:
            self._collect(pkg_tree)
        except Exception as exc:  # a damaged tree object: gitpython raises many exception types
            if isinstance(exc, GitRefError):
                raise
            raise _corrupt(self.label, package, exc) from None
        self.version = self._version_from_sources() or ref

    def _collect(self, pkg_tree: object) -> None:
        for item in pkg_tree.traverse():  # type: ignore[attr-defined]
            if item.type != "blob":
                continue
            if item.mode & 0o170000 == 0o120000:  # a symlink: git stores its target as text
                if item.path.endswith(".py"):
                    self._skip(item.path, "a symlink in the git tree")
            elif item.size > MAX_SOURCE_BYTES and item.path.endswith(".py"):
                self._skip(
                    item.path, f"larger than the {MAX_SOURCE_BYTES // (1024 * 1024)} MiB size cap"
                )
            else:
                self._blobs[item.path] = item

    def _skip(self, rel: str, problem: str) -> None:
        self._skipped[rel] = problem
        self.degradations.append(SkippedFile(f"{self.label}: {rel}", problem).degradation())

    @property
    def fingerprint(self) -> str:
        """A commit names its content exactly."""
        return f"git-{self.commit}"

    def read_bytes(self, relpath: str) -> bytes:
        blob = self._blobs.get(relpath)
        if relpath in self._skipped:
            raise SkippedFile(f"{self.label}: {relpath}", self._skipped[relpath])
        if blob is None:
            raise FileNotFoundError(relpath)
        try:
            return blob.data_stream.read()  # type: ignore[attr-defined]
        except Exception as exc:  # gitpython surfaces object damage as many exception types
            raise _corrupt(self.label, relpath, exc) from None

    def content_hash(self, relpath: str) -> str:
        # Hash the content, not the blob id, so git and folder trees share the parse cache.
        return hashlib.sha256(self.read_bytes(relpath)).hexdigest()

    def exists(self, relpath: str) -> bool:
        return relpath in self._blobs or relpath in self._skipped

    def iter_py_files(self) -> Iterator[str]:
        return iter(sorted(p for p in self._blobs if p.endswith(".py")))


def _corrupt(label: str, relpath: str, exc: BaseException):
    return GitRefError(
        f"{label}: cannot read {relpath} from git ({type(exc).__name__}: {exc})",
        hint="the repository's object store is damaged: run `git fsck` there, or re-clone it",
    )
