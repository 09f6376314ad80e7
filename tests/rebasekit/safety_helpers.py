"""Helpers for the safety tests: a CLI runner that lets no crash pass, file snapshots."""

from __future__ import annotations

import hashlib
from pathlib import Path

from typer.testing import CliRunner

from rebasekit.cli import app


def cli(*args: object):
    """Invoke rebasekit; any exception other than a deliberate exit fails the test."""
    res = CliRunner().invoke(app, [str(a) for a in args])
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(
            f"rebasekit crashed: {res.exception!r}\n{res.output}"
        ) from res.exception
    return res


def snapshot(root: Path) -> dict[str, str]:
    """relpath -> sha256 of every file under ``root`` (to prove nothing changed)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
