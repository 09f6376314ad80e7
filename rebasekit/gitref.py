"""Check a user-given git ref before any git command sees it.

A ref is handed to ``git`` as a command-line argument, so one that starts with ``-``
would be read as an option (``--output=FILE`` makes ``git diff`` truncate FILE). Every
ref from the command line is turned into a commit id here first, by
``git rev-parse --verify --end-of-options REF^{commit}``, and only that id travels on.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from rebasekit.errors import GitRefError


def verify_commit(repo_dir: Path, ref: str) -> str:
    """The full commit id ``ref`` names in ``repo_dir``; raises :class:`GitRefError` otherwise."""
    if not ref or ref.startswith("-") or any(ch in ref for ch in "\0\n\r"):
        raise GitRefError(
            f"{ref!r} is not a git ref (a ref never starts with '-' or holds control characters)",
            hint="give a branch, tag or commit id, e.g. main or v0.27.0",
        )
    cmd = [
        "git",
        "-C",
        str(repo_dir),
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        f"{ref}^{{commit}}",
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise GitRefError("git is not installed", hint="install git to use git refs") from None
    sha = proc.stdout.strip()
    if proc.returncode != 0 or len(sha) < 40:
        raise GitRefError(
            f"no ref {ref!r} in {repo_dir}",
            hint="use a tag, branch or commit that exists there (git -C REPO tag --list)",
        )
    return sha
