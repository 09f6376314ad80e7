"""Human output: one rich table per plugin file, then a one-line summary."""

from __future__ import annotations

from itertools import groupby

from rich.console import Console
from rich.table import Table

from rebasekit.findings import Drift, Severity

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def render_table(result, console: Console) -> None:
    header = f"plugin vs {result.new_label}" + (f" (drift since {result.old_label})" if result.old_label else "")
    console.print(f"[bold]rebasekit[/bold] {header}")
    if not result.findings:
        console.print("[green]no findings[/green]" + (f" ({len(result.suppressed)} suppressed)" if result.suppressed else ""))
        return
    show_drift = result.old_label is not None
    for path, group in groupby(result.findings, key=lambda f: f.plugin.path if f.plugin else "(no file)"):
        table = Table(title=path, title_justify="left", show_lines=False, expand=False)
        table.add_column("line", justify="right")
        table.add_column("code")
        table.add_column("severity")
        if show_drift:
            table.add_column("drift")
        table.add_column("finding", overflow="fold")
        table.add_column("upstream", overflow="fold")
        for f in group:
            text = f.message + (f"\n[dim]→ {f.suggestion}[/dim]" if f.suggestion else "")
            row = [str(f.plugin.line or "") if f.plugin else "", f.code,
                   f"[{_STYLE[f.severity]}]{f.severity.value}[/]"]
            if show_drift:
                row.append("[bold]new[/bold]" if f.drift is Drift.NEW else f.drift.value)
            row += [text, f.upstream.render() if f.upstream else ""]
            table.add_row(*row)
        console.print(table)
    counts = {s: sum(1 for f in result.findings if f.severity is s) for s in Severity}
    summary = ", ".join(f"{n} {s.value}" for s, n in counts.items() if n)
    if show_drift:
        summary += f"; {sum(1 for f in result.findings if f.drift is Drift.NEW)} new since {result.old_label}"
    if result.suppressed:
        summary += f"; {len(result.suppressed)} suppressed"
    console.print(f"{len(result.findings)} findings ({summary})")
