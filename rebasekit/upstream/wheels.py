"""Release trees from the package registry, extracted once into a per-version cache.

``pip download --no-deps --only-binary=:all:`` fetches the wheel (pip's own HTTP cache
makes repeats cheap); only ``.py`` files and the dist ``METADATA`` are extracted. The
extraction happens in a scratch folder that is renamed into place, and a manifest (file
count, byte count, content digest) is written last, so a folder without a valid manifest
is by construction partial or tampered with.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from packaging.version import InvalidVersion, Version

from rebasekit.errors import CacheError, DownloadError, InputError, NetworkError, UnknownVersionError
from rebasekit.paths import trees_dir
from rebasekit.upstream.tree import FolderTree

MANIFEST = ".rebasekit-manifest.json"
MANIFEST_FORMAT = 1

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


def version_tree(version: str, package: str = "vllm") -> FolderTree:
    """The cached tree for ``package==version``, downloading and extracting it if needed."""
    try:
        Version(version)
    except InvalidVersion as exc:
        raise InputError(f"{version!r} is not a version number", hint="write it like 0.27.0") from exc
    dest = trees_dir() / f"{package}-{version}"
    if not dest.exists():
        _materialise(package, version, dest)
    manifest = verify(dest)
    py_files = [f for f in manifest["files"] if f.startswith(package + "/") and f.endswith(".py")]
    return FolderTree(dest, package, version=version, label=f"{package}=={version}",
                      files=py_files, fingerprint=manifest.get("sha256"))


def verify(dest: Path) -> dict:
    """Check a cached tree against its manifest (counts and sizes; cheap enough per run)."""
    fix = f"delete {dest} and run the command again to re-download it"
    manifest_path = dest / MANIFEST
    if not manifest_path.is_file():
        raise CacheError(f"cached tree {dest} is partial (no manifest)", hint=fix)
    try:
        manifest = json.loads(manifest_path.read_text())
        files = manifest["files"]
        count, total = manifest["count"], manifest["bytes"]
    except (ValueError, KeyError, TypeError) as exc:
        raise CacheError(f"cached tree {dest} has a corrupt manifest", hint=fix) from exc
    if manifest.get("format") != MANIFEST_FORMAT or len(files) != count:
        raise CacheError(f"cached tree {dest} has a manifest from another format", hint=fix)
    seen = 0
    for rel, size in files.items():
        path = dest / rel
        try:
            actual = path.stat().st_size
        except FileNotFoundError as exc:
            raise CacheError(f"cached tree {dest} is partial: {rel} is missing", hint=fix) from exc
        if actual != size:
            raise CacheError(f"cached tree {dest} is corrupt: {rel} changed size", hint=fix)
        seen += size
    if seen != total:
        raise CacheError(f"cached tree {dest} is corrupt (byte count differs)", hint=fix)
    return manifest


def _materialise(package: str, version: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rebasekit-dl-", dir=dest.parent) as scratch:
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
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--quiet", "--dest", str(into), f"{package}=={version}",
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
        raise DownloadError(f"pip download of {package}=={version} failed:\n{tail}",
                            hint="run the pip command by hand to see the full error")
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        raise DownloadError(f"pip download of {package}=={version} produced no wheel",
                            hint="the release may ship only a source archive; pass --vllm PATH")
    return wheels[0]


def _extract(wheel: Path, staging: Path, package: str) -> None:
    files: dict[str, int] = {}
    digest = hashlib.sha256()
    meta_re = re.compile(rf"^{re.escape(package)}-[^/]+\.dist-info/METADATA$", re.I)
    try:
        with zipfile.ZipFile(wheel) as zf:
            for info in sorted(zf.infolist(), key=lambda i: i.filename):
                name = info.filename
                wanted = (name.startswith(package + "/") and name.endswith(".py")) or meta_re.match(name)
                if not wanted or info.is_dir() or ".." in name.split("/"):
                    continue
                data = zf.read(info)
                target = staging / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                files[name] = len(data)
                digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    except zipfile.BadZipFile as exc:
        raise DownloadError(f"{wheel.name} is not a valid wheel", hint="delete pip's cache and retry") from exc
    if not any(f.startswith(package + "/") for f in files):
        shutil.rmtree(staging, ignore_errors=True)
        raise DownloadError(f"{wheel.name} contains no '{package}' package",
                            hint=f"the wheel must hold a top-level '{package}' folder; or pass --vllm PATH to a source folder")
    manifest = {"format": MANIFEST_FORMAT, "wheel": wheel.name, "count": len(files),
                "bytes": sum(files.values()), "sha256": digest.hexdigest(), "files": files}
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=0, sort_keys=True))
