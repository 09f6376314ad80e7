"""The layering of rebasekit/ARCHITECTURE.md holds, and its contract catches a wrong-way import.

``lint-imports`` runs in CI (``bash scripts/dev.sh lint``); this test proves the contract
is not vacuous: the same configuration, run on a copy of the package with one import
that points up the layers, must report that import.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# A test dependency: the Python 3.10 job installs the base dependencies only.
pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[2]


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    # -S: no .pth files, so the editable install's import hook cannot point "rebasekit" back
    # at this checkout; the copy comes first on the path, then the installed libraries.
    paths = [str(root)] + [p for p in sys.path if "site-packages" in p]
    code = (
        f"import sys; sys.path[:0] = {paths!r}; "
        "from importlinter.cli import lint_imports_command; lint_imports_command()"
    )
    return subprocess.run(
        [sys.executable, "-S", "-c", code, "--no-cache", str(root / "pyproject.toml")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / "copy"
    shutil.copytree(ROOT / "rebasekit", dest / "rebasekit")
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def test_the_layering_contracts_are_kept(tmp_path):
    res = _lint_imports(_copy(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Contracts: 3 kept, 0 broken." in res.stdout


def test_an_upward_import_breaks_the_layers(tmp_path):
    copy = _copy(tmp_path)
    models = copy / "rebasekit" / "index" / "models.py"
    models.write_text(models.read_text() + "\nfrom rebasekit.scan import run_scan  # noqa\n")
    res = _lint_imports(copy)
    assert res.returncode == 1
    assert "rebasekit.index.models -> rebasekit.scan" in res.stdout


def test_a_download_from_a_check_breaks_the_purity_contract(tmp_path):
    copy = _copy(tmp_path)
    check = copy / "rebasekit" / "checks" / "imports.py"
    check.write_text(check.read_text() + "\nfrom rebasekit.upstream import open_tree  # noqa\n")
    res = _lint_imports(copy)
    assert res.returncode == 1
    assert "rebasekit.checks is not allowed to import rebasekit.upstream" in res.stdout


def test_a_gpl_merge_import_breaks_the_license_contract(tmp_path):
    copy = _copy(tmp_path)
    merge = copy / "rebasekit" / "analysis" / "merge.py"
    merge.write_text(merge.read_text() + "\nimport merge3  # noqa\n")
    res = _lint_imports(copy)
    assert res.returncode == 1
    assert "rebasekit.analysis.merge -> merge3" in res.stdout
