"""Release trees from the package registry, extracted once into a per-version cache.

``pip download --no-deps --only-binary=:all:`` fetches the wheel (pip's own HTTP cache
makes repeats cheap); only ``.py`` files and the dist ``METADATA`` are extracted. The
extraction happens in a scratch folder that is renamed into place, and a manifest (every
file's SHA-256, their count and the tree's digest) is written last, so a folder without a
valid manifest is by construction partial. Every run checks the cached files against the
manifest, so a tree edited or damaged in the cache is reported, never analysed as if it
were the release: a file is hashed again unless its size, times and inode are those
recorded when it last hashed equal to the manifest (:mod:`rebasekit.upstream.stamps`
says exactly what that covers).

Versions are normalised with ``packaging`` (``0.26`` and ``v0.26.0`` are the folder
``vllm-0.26.0``). Scratch folders carry the downloading process's id: one left by a
killed run (whose process is gone) is removed by the next download.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

from packaging.version import InvalidVersion, Version

from rebasekit.errors import (
    CacheError,
    DownloadError,
    InputError,
    NetworkError,
    UnknownVersionError,
)
from rebasekit.paths import trees_dir
from rebasekit.upstream import stamps
from rebasekit.upstream.tree import FolderTree

MANIFEST = ".rebasekit-manifest.json"
MANIFEST_FORMAT = 2
SCRATCH_PREFIX = "rebasekit-dl-"

_NO_VERSION = ("No matching distribution found", "Could not find a version that satisfies")
_NO_NETWORK = (
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Connection refused",
    "Max retries exceeded",
    "ConnectTimeoutError",
    "ReadTimeoutError",
)


def normalise_version(text: str) -> str:
    """``text`` as one spelling per release: PEP 440 normal form, release padded to X.Y.Z."""
    try:
        v = Version(text)
    except InvalidVersion as exc:
        raise InputError(f"{text!r} is not a version number", hint="write it like 0.27.0") from exc
    release = list(v.release) + [0] * max(0, 3 - len(v.release))
    while len(release) > 3 and release[-1] == 0:
        release.pop()
    out = (f"{v.epoch}!" if v.epoch else "") + ".".join(map(str, release))
    if v.pre is not None:
        out += f"{v.pre[0]}{v.pre[1]}"
    if v.post is not None:
        out += f".post{v.post}"
    if v.dev is not None:
        out += f".dev{v.dev}"
    return out + (f"+{v.local}" if v.local else "")


def version_tree(version: str, package: str = "vllm") -> FolderTree:
    """The cached tree for ``package==version``, downloading and extracting it if needed."""
    version = normalise_version(version)
    dest = trees_dir() / f"{package}-{version}"
    try:
        if _stale_format(dest):
            shutil.rmtree(dest)  # written by an older rebasekit: rebuilt, not an error
        if not dest.exists():
            _materialise(package, version, dest)
    except OSError as exc:
        raise CacheError(
            f"cannot use the cache folder {dest.parent}: {exc.strerror or exc}",
            hint="make it a writable folder, or point REBASEKIT_CACHE_DIR at one",
        ) from None
    manifest = verify(dest)
    py_files = [f for f in manifest["files"] if f.startswith(package + "/") and f.endswith(".py")]
    return FolderTree(
        dest,
        package,
        version=version,
        label=f"{package}=={version}",
        files=py_files,
        fingerprint=manifest["sha256"],
    )


def _stale_format(dest: Path) -> bool:
    try:
        manifest = json.loads((dest / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    fmt = manifest.get("format") if isinstance(manifest, dict) else None
    return isinstance(fmt, int) and fmt < MANIFEST_FORMAT


def verify(dest: Path) -> dict:
    """Check a cached tree against its manifest: every file's SHA-256 and the tree digest."""
    fix = f"delete {dest} and run the command again to re-download it"
    manifest_path = dest / MANIFEST
    if not manifest_path.is_file():
        raise CacheError(f"cached tree {dest} is partial (no manifest)", hint=fix)
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files = manifest["files"]
        count, tree_digest = manifest["count"], manifest["sha256"]
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise TypeError("file entries are not path -> sha256")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CacheError(f"cached tree {dest} has a corrupt manifest", hint=fix) from exc
    if manifest.get("format") != MANIFEST_FORMAT or len(files) != count:
        raise CacheError(f"cached tree {dest} has a manifest from another format", hint=fix)
    known = stamps.load(dest, tree_digest)
    fresh: dict[str, tuple[stamps.Stamp, str]] = {}
    now = stamps.now_ns()
    digest = hashlib.sha256()
    for rel in sorted(files):
        path = dest / rel
        if ".." in rel.split("/") or rel.startswith("/"):
            raise CacheError(f"cached tree {dest} has a corrupt manifest (path {rel!r})", hint=fix)
        try:
            stamp = stamps.stamp_of(os.stat(path))
            seen = known.get(rel)
            if seen is not None and seen == (stamp, files[rel]):
                sha = files[rel]  # hashed equal to the manifest, unchanged since: see stamps
                fresh[rel] = seen
            else:
                sha = hashlib.sha256(path.read_bytes()).hexdigest()
                if sha == files[rel] and stamps.settled(stamp, now):
                    fresh[rel] = (stamp, sha)
        except FileNotFoundError:
            raise CacheError(f"cached tree {dest} is partial: {rel} is missing", hint=fix) from None
        except OSError as exc:
            raise CacheError(
                f"cached tree {dest} is corrupt: {rel} cannot be read ({exc.strerror})", hint=fix
            ) from None
        if sha != files[rel]:
            raise CacheError(
                f"cached tree {dest} is corrupt: {rel} changed (its hash differs from the manifest)",
                hint=fix,
            )
        try:
            digest.update(rel.encode() + b"\0" + bytes.fromhex(sha))
        except ValueError:
            raise CacheError(f"cached tree {dest} has a corrupt manifest", hint=fix) from None
    if digest.hexdigest() != tree_digest:
        raise CacheError(
            f"cached tree {dest} is corrupt (the tree digest differs from the manifest)", hint=fix
        )
    if fresh != known:
        stamps.save(dest, tree_digest, fresh)
    return manifest


def clean_stale_scratch(folder: Path) -> None:
    """Remove scratch folders whose downloading process is gone (killed mid-download)."""
    for scratch in folder.glob(SCRATCH_PREFIX + "*"):
        pid_text = scratch.name[len(SCRATCH_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit() or not _alive(int(pid_text)):
            shutil.rmtree(scratch, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


@contextlib.contextmanager
def _terminate_unwinds() -> Iterator[None]:
    """Let SIGTERM unwind the stack (running cleanups) instead of ending the process on the spot."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _materialise(package: str, version: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_scratch(dest.parent)
    with (
        _terminate_unwinds(),
        tempfile.TemporaryDirectory(
            prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=dest.parent
        ) as scratch,
    ):
        wheel = _download(package, version, Path(scratch) / "wheel")
        staging = Path(scratch) / "tree"
        _extract(wheel, staging, package)
        try:
            os.replace(staging, dest)
        except OSError:
            if not (dest / MANIFEST).is_file():  # not a concurrent winner: a real failure
                raise


def _download(package: str, version: str, into: Path) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--quiet",
        "--dest",
        str(into),
        f"{package}=={version}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        # Network first: an unreachable index also ends in "No matching distribution found",
        # which must not read as an unknown version.
        # pip only prints connection errors while it retries; without retries an unreachable
        # index shows up as "(from versions: none)": not one release of the package listed.
        if any(marker in output for marker in _NO_NETWORK) or "(from versions: none)" in output:
            raise NetworkError(
                f"cannot reach the package registry to download {package}=={version} "
                f"(no {package} release could be listed)",
                hint="connect to the network (pip honours PIP_INDEX_URL and its config), or pass a "
                "local tree with --vllm PATH / --vllm-git REPO@REF",
            )
        if any(marker in output for marker in _NO_VERSION):
            raise UnknownVersionError(
                f"the package registry has no {package} wheel for version {version}",
                hint=f"check the version (pip index versions {package}) or pass --vllm PATH",
            )
        tail = "\n".join(output.strip().splitlines()[-5:])
        raise DownloadError(
            f"pip download of {package}=={version} failed:\n{tail}",
            hint="run the pip command by hand to see the full error",
        )
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        raise DownloadError(
            f"pip download of {package}=={version} produced no wheel",
            hint="the release may ship only a source archive; pass --vllm PATH",
        )
    return wheels[0]


def _extract(wheel: Path, staging: Path, package: str) -> None:
    files: dict[str, str] = {}
    digest = hashlib.sha256()
    total = 0
    meta_re = re.compile(rf"^{re.escape(package)}-[^/]+\.dist-info/METADATA$", re.I)
    try:
        with zipfile.ZipFile(wheel) as zf:
            for info in sorted(zf.infolist(), key=lambda i: i.filename):
                name = info.filename
                wanted = (name.startswith(package + "/") and name.endswith(".py")) or meta_re.match(
                    name
                )
                if not wanted or info.is_dir() or ".." in name.split("/"):
                    continue
                data = zf.read(info)
                target = staging / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                file_digest = hashlib.sha256(data)
                files[name] = file_digest.hexdigest()
                total += len(data)
                digest.update(name.encode() + b"\0" + file_digest.digest())
    except zipfile.BadZipFile as exc:
        raise DownloadError(
            f"{wheel.name} is not a valid wheel", hint="delete pip's cache and retry"
        ) from exc
    if not any(f.startswith(package + "/") for f in files):
        shutil.rmtree(staging, ignore_errors=True)
        raise DownloadError(
            f"{wheel.name} contains no '{package}' package",
            hint=f"the wheel must hold a top-level '{package}' folder; or pass --vllm PATH to a source folder",
        )
    manifest = {
        "format": MANIFEST_FORMAT,
        "wheel": wheel.name,
        "count": len(files),
        "bytes": total,
        "sha256": digest.hexdigest(),
        "files": files,
    }
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=0, sort_keys=True))
