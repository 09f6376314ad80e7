"""Shared paths and helpers for the deep-drift tests (fixtures in fixtures_deep/)."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures_deep"
OLD = FIXTURES / "upstream_old"
NEW = FIXTURES / "upstream_new"
PLUGIN = FIXTURES / "plugin" / "deepplug"


def copy_fixtures(tmp_path: Path) -> Path:
    """A private copy of the fixture folder (for tests that write)."""
    dest = tmp_path / "fx"
    shutil.copytree(FIXTURES, dest)
    return dest
