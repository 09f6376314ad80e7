"""Release sources for the real-plugin evaluation, fetched once into a cache outside the repo.

Plugin sdists come from the package registry: ``pip download --no-binary :all:
--no-build-isolation`` first (it builds the sdist's metadata in this environment, which
fails for plugins whose build needs CUDA or a compiler toolchain; without
``--no-build-isolation`` pip would first build every build requirement, torch included,
from source), then the registry's simple index (PEP 691 JSON) with the file's published
SHA-256 checked. Upstream vLLM trees come through rebasekit's own wheel cache
(``rebasekit.upstream.wheels.version_tree``: the wheel's ``.py`` files, verified by manifest).

The held-out arctic-inference releases are refused here so no run can fetch them by accident.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

INDEX = "https://pypi.org/simple"
HELD_OUT = {("arctic-inference", "0.2.0"), ("arctic-inference", "0.3.0")}


def cache_root() -> Path:
    """``$REBASEKIT_BENCH_CACHE``, else ``$XDG_CACHE_HOME/rebasekit-bench``, else ``~/.cache/...``."""
    explicit = os.environ.get("REBASEKIT_BENCH_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rebasekit-bench"


def _sdist_name(project: str, version: str) -> str:
    return f"{re.sub(r'[-_.]+', '_', project).lower()}-{version}.tar.gz"


def _from_index(project: str, version: str, dest: Path) -> Path:
    """The sdist file from the simple index, its published SHA-256 checked."""
    req = urllib.request.Request(
        f"{INDEX}/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        files = json.load(resp)["files"]
    wanted = _sdist_name(project, version)
    entry = next((f for f in files if f["filename"].lower() == wanted), None)
    if entry is None:
        raise SystemExit(f"no sdist {wanted} on the index; check the version")
    with urllib.request.urlopen(entry["url"], timeout=300) as resp:
        data = resp.read()
    expected = entry.get("hashes", {}).get("sha256")
    if expected and hashlib.sha256(data).hexdigest() != expected:
        raise SystemExit(f"{wanted}: SHA-256 differs from the index; delete {dest} and retry")
    out = dest / entry["filename"]
    tmp = out.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(out)
    return out


def sdist(project: str, version: str) -> Path:
    """The extracted sdist folder of ``project==version`` (downloaded on first use)."""
    if (project, version) in HELD_OUT:
        raise SystemExit(f"{project} {version} is held out of the evaluation; pick another release")
    root = cache_root() / "sdists"
    root.mkdir(parents=True, exist_ok=True)
    extracted = root / f"{project}-{version}"
    if (extracted / ".complete").exists():
        return next(p for p in extracted.iterdir() if p.is_dir())
    archive = root / _sdist_name(project, version)
    if not archive.exists():
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--no-build-isolation",
                f"{project}=={version}",
                "-d",
                str(root),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not archive.exists():
            archive = _from_index(project, version, root)
    extracted.mkdir(exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(extracted, filter="data")
    (extracted / ".complete").write_text("")
    return next(p for p in extracted.iterdir() if p.is_dir())


def vllm_tree(version: str) -> Path:
    """The folder holding release ``version``'s ``vllm`` package, from rebasekit's wheel cache."""
    from rebasekit.upstream.wheels import version_tree

    return version_tree(version).root


def read_pin(src: Path) -> str:
    """The exact vLLM release the sdist declares: the ``vllm`` extra, requirements, Dockerfile."""
    pyproject = src / "pyproject.toml"
    if pyproject.exists():
        data = tomllib.loads(pyproject.read_text())
        extra = data.get("project", {}).get("optional-dependencies", {}).get("vllm", [])
        for req in extra:
            m = re.fullmatch(r"\s*vllm\s*==\s*([\w.]+)\s*", req)
            if m:
                return m.group(1)
    for req_file in sorted(src.glob("requirements*.txt")):
        m = re.search(r"^\s*vllm\s*==\s*([\w.]+)", req_file.read_text(), re.M)
        if m:
            return m.group(1)
    dockerfile = src / "Dockerfile"
    if dockerfile.exists():
        m = re.search(r"^ARG VLLM_TAG=v?([\w.]+)", dockerfile.read_text(), re.M)
        if m:
            return m.group(1)
    raise SystemExit(f"{src}: no exact vllm pin found (pyproject extra, requirements, Dockerfile)")
