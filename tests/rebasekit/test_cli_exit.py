"""The console entry ends the process itself: same output, same exit status as the app."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import StrictRunner as CliRunner

from rebasekit.cli import app, exit_status

FIX = Path(__file__).parent / "fixtures"
PLUGIN = str(FIX / "plugin" / "tinyplug")
OLD, NEW = FIX / "upstream_old", FIX / "upstream_new"


def _module(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {"REBASEKIT_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "rebasekit", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("code", "status"), [(None, 0), (0, 0), (1, 1), (2, 2), (256, 0), ("no", 1), (True, 1)]
)
def test_exit_status_is_what_sys_exit_gives(code: object, status: int) -> None:
    assert exit_status(code) == status


def test_a_scan_prints_its_whole_report_and_status_as_the_app_does(tmp_path: Path) -> None:
    args = ["scan", "--plugin", PLUGIN, "--from", str(OLD), "--to", str(NEW), "--json"]
    inproc = CliRunner().invoke(app, args, env={"REBASEKIT_CACHE_DIR": str(tmp_path / "a")})
    assert inproc.exit_code == 1, inproc.output  # the fixture plugin has findings
    proc = _module(*args, cache=tmp_path / "a")
    assert proc.returncode == inproc.exit_code, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)  # complete: flushed before the process ended
    assert report["findings"] == json.loads(inproc.stdout)["findings"]
    assert report["findings"]


def test_usage_errors_and_help_keep_their_status(tmp_path: Path) -> None:
    bad = _module("no-such-command", cache=tmp_path)
    assert bad.returncode == 2 and "No such command" in bad.stderr
    helped = _module("scan", "--help", cache=tmp_path)
    assert helped.returncode == 0 and "--patch-base" in helped.stdout
