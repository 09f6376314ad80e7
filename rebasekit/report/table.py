"""Human output: findings grouped by plugin file, then a one-line summary.

Findings carry long prose (what changed upstream, where, what to do), so a six-column
table only reads well on a wide terminal; at 80 columns (a CI log, a pipe) its message
column is squeezed to a word per line. Below :data:`TABLE_MIN_WIDTH` each finding is
printed as a block instead: a ``path:line CODE severity drift`` header, then the
message, the upstream location and the suggestion, each wrapped with an indent.
Finding text is always passed as :class:`~rich.text.Text`, never as markup, because
messages quote code such as ``x[forked]`` that rich would read as style tags.
"""

from __future__ import annotations

from itertools import groupby

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rebasekit.findings import Drift, Finding, Severity
from rebasekit.report.patches import patch_text

TABLE_MIN_WIDTH = 120
_INDENT = 2
_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _tree_text(label: str | None, version: str | None, source: str | None, root: str | None) -> str:
    """``label (version) from SPEC at FOLDER``: what the tree is and where it was read."""
    text = f"{label}" + (f" ({version})" if version else "")
    text += f" from {source}" if source and source != label else ""
    return text + (f" at {root}" if root and root not in (label or "") else "")


def render_table(result, console: Console) -> None:
    """Print ``result``: what was scanned, any warnings, then the findings.

    Tables on a wide console, one block per finding otherwise.
    """
    print_wrapped(
        console, Text.assemble(("rebasekit", "bold"), " plugin ", result.plugin_dir or "(none)")
    )
    print_wrapped(
        console,
        Text(
            f"  NEW: {_tree_text(result.new_label, result.new_version, result.new_source, result.new_root)}"
        ),
    )
    if result.old_label:
        print_wrapped(
            console,
            Text(
                f"  OLD: {_tree_text(result.old_label, result.old_version, result.old_source, result.old_root)}"
                " (drift since)"
            ),
        )
    for d in result.degradations:
        print_wrapped(console, Text.assemble(("warning: ", "bold yellow"), d.render()))
    if result.degradations:
        print_wrapped(
            console,
            Text(
                f"incomplete analysis: {len(result.degradations)} warning(s) above; "
                "the result below does not cover them",
                "bold yellow",
            ),
        )
    print_wrapped(console, Text(f"checked {patch_text(result)}"))
    if not result.findings:
        console.print(
            Text("no findings", "green")
            + Text(f" ({len(result.suppressed)} suppressed)" if result.suppressed else "")
        )
        return
    show_drift = result.old_label is not None
    if console.width >= TABLE_MIN_WIDTH:
        _tables(result.findings, console, show_drift)
    else:
        _blocks(result.findings, console, show_drift)
    print_wrapped(console, summary_line(result))


def _path(f: Finding) -> str:
    return f.plugin.path if f.plugin else "(no file)"


def _drift_text(f: Finding) -> Text:
    return Text("new", "bold") if f.drift is Drift.NEW else Text(f.drift.value)


def _tables(findings: list[Finding], console: Console, show_drift: bool) -> None:
    for path, group in groupby(findings, key=_path):
        table = Table(title=path, title_justify="left", show_lines=False, expand=False)
        table.add_column("line", justify="right")
        table.add_column("code")
        table.add_column("severity")
        if show_drift:
            table.add_column("drift")
        table.add_column("finding", overflow="fold", ratio=3)
        table.add_column("upstream", overflow="fold", ratio=1)
        for f in group:
            text = Text(f.message)
            if f.suggestion:
                text.append(f"\n→ {f.suggestion}", "dim")
            row: list[Text | str] = [
                str(f.plugin.line or "") if f.plugin else "",
                f.code,
                Text(f.severity.value, _STYLE[f.severity]),
            ]
            if show_drift:
                row.append(_drift_text(f))
            row += [text, f.upstream.render() if f.upstream else ""]
            table.add_row(*row)
        console.print(table)


def _blocks(findings: list[Finding], console: Console, show_drift: bool) -> None:
    for f in findings:
        where = _path(f) + (f":{f.plugin.line}" if f.plugin and f.plugin.line else "")
        head = Text.assemble(
            (where, "bold"), " ", f.code, " ", (f.severity.value, _STYLE[f.severity])
        )
        if show_drift:
            head.append(" ")
            head.append_text(_drift_text(f))
        console.print(head, overflow="fold")
        lines = [Text(f.message)]
        if f.upstream:
            lines.append(Text.assemble(("upstream: ", "dim"), f.upstream.render()))
        if f.suggestion:
            lines.append(Text.assemble(("suggestion: ", "dim"), f.suggestion))
        for line in lines:
            print_wrapped(console, line, _INDENT)
        console.print()


def print_wrapped(console: Console, text: Text, indent: int = 0) -> None:
    """Print ``text`` wrapped to the console width, indented, without trailing blanks."""
    for part in text.wrap(console, max(console.width - indent, 20), overflow="fold"):
        part.rstrip()  # wrapped lines come padded to the width; logs want no trailing blanks
        console.print(Text(" " * indent) + part, soft_wrap=True)


def summary_line(result) -> Text:
    """``N findings (a error, b warning; c new since OLD; d suppressed)``."""
    counts = {s: sum(1 for f in result.findings if f.severity is s) for s in Severity}
    summary = ", ".join(f"{n} {s.value}" for s, n in counts.items() if n)
    if result.old_label is not None:
        summary += f"; {sum(1 for f in result.findings if f.drift is Drift.NEW)} new since {result.old_label}"
    if result.suppressed:
        summary += f"; {len(result.suppressed)} suppressed"
    noun = "finding" if len(result.findings) == 1 else "findings"
    return Text(f"{len(result.findings)} {noun} ({summary})")
