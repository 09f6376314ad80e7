"""The CLI imports only the module of the command it runs, and still lists every command."""

from __future__ import annotations

import importlib
import subprocess
import sys

import typer

from rebasekit import cli


def _loaded_after(code: str) -> set[str]:
    probe = (
        f"import sys\n{code}\n"
        "print(' '.join(m for m in sys.modules if m.startswith('rebasekit') or m == 'libcst'))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
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
