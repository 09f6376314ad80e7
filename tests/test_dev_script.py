"""The README's front door refuses a full install it has no room for, before touching disk.

A CI machine whose disk filled half-way through pip's install failed with pip's own
``OSError`` after writing gigabytes; the script now says what it needs first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _dev(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "ARCTIC_VENV": str(tmp_path / "venv"), **env}
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "dev.sh"), *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_fresh_full_install_without_room_exits_2_and_names_the_fix(tmp_path):
    done = _dev(tmp_path, "test", ARCTIC_INSTALL_MIN_FREE_GB="1000000")
    assert done.returncode == 2, done.stderr
    assert "needs about 1000000 GB free" in done.stderr
    assert "ARCTIC_VENV" in done.stderr
    assert "Traceback" not in done.stderr
    # Refused before anything was written: no half-made venv is left behind.
    assert not (tmp_path / "venv").exists()


def test_an_installed_venv_is_reused_whatever_the_free_space(tmp_path):
    """The check guards fresh installs only: this suite's own venv passes it on any disk."""
    done = _dev(tmp_path, "room", ARCTIC_VENV=sys.prefix, ARCTIC_INSTALL_MIN_FREE_GB="1000000")
    assert done.returncode == 0, done.stderr
    assert "needs about" not in done.stderr


def test_room_measures_the_disk_of_a_venv_not_yet_made(tmp_path):
    """A venv path whose folders do not exist yet is measured on the nearest one that does."""
    done = _dev(
        tmp_path,
        "room",
        ARCTIC_VENV=str(tmp_path / "a" / "b" / "venv"),
        ARCTIC_INSTALL_MIN_FREE_GB="0",
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "a").exists()
