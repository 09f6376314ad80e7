"""The CLI imports only the module of the command it runs, and still lists every command."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import typer
from deep_helpers import NEW, PLUGIN

from rebasekit import cli


def _loaded_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    probe = (
        f"import sys\n{code}\n"
        "print(' '.join(m for m in sys.modules if m.startswith('rebasekit') or m == 'libcst'"
        " or m == 'rich'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
    )
    return set(out.stdout.split())


def test_importing_the_cli_imports_no_command_module():
    loaded = _loaded_after("import rebasekit.cli")
    assert "rebasekit.cli" in loaded
    assert not {m for m in loaded if m.startswith("rebasekit.commands.")} - {
        "rebasekit.commands._common"
    }


def test_a_scan_loads_neither_history_nor_port_planning_nor_libcst():
    loaded = _loaded_after(
        "from typer.testing import CliRunner\n"
        "from rebasekit.cli import app\n"
        "CliRunner().invoke(app, ['scan', '--help'])"
    )
    assert "rebasekit.commands.scan" in loaded
    assert not {m for m in loaded if m.startswith(("rebasekit.history", "rebasekit.runbook"))}
    assert not {"rebasekit.commands.compare_pins", "rebasekit.commands.port", "libcst"} & loaded


def test_the_table_names_every_command_the_modules_register():
    holder = typer.Typer()
    modules = dict.fromkeys(m for mods in cli.COMMANDS.values() for m in mods)
    for module in modules:
        importlib.import_module(f"rebasekit.commands.{module}").register(holder)
    registered = {c.name for c in holder.registered_commands}
    registered |= {g.name for g in holder.registered_groups}
    assert registered == set(cli.COMMANDS)


def test_every_listed_command_resolves():
    group = typer.main.get_command(cli.app)
    ctx = group.make_context("rebasekit", ["--help"], resilient_parsing=True)
    names = group.list_commands(ctx)
    assert names == list(cli.COMMANDS)
    assert [group.get_command(ctx, n).name for n in names] == names
    assert group.get_command(ctx, "no-such-command") is None


def test_a_json_scan_without_warnings_loads_no_rich(tmp_path):
    report = tmp_path / "report.json"
    loaded = _loaded_after(
        "from typer.testing import CliRunner\n"
        "from rebasekit.cli import app\n"
        f"args = ['scan', '--plugin', {str(PLUGIN)!r}, '--vllm', {str(NEW)!r}, '--json']\n"
        "result = CliRunner().invoke(app, args)\n"
        "assert result.exit_code == 1 and not isinstance(result.exception, Exception), result\n"
        f"open({str(report)!r}, 'w').write(result.stdout)",
        env={**os.environ, "REBASEKIT_CACHE_DIR": str(tmp_path / "cache")},
    )
    data = json.loads(report.read_text())
    assert data["findings"] and data["complete"] and not data["degradations"]
    assert "rebasekit.report.json_report" in loaded
    assert not {"rich", "rebasekit.report.table", "rebasekit.report.sarif"} & loaded
