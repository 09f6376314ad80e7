"""Auto-port: carry upstream's OLD→NEW change into the plugin's copies of upstream code.

For every override that *copies* an upstream method whose body drifted, and every fork
whose upstream file drifted, a three-way merge runs with base = upstream at OLD,
ours = the plugin's text, theirs = upstream at NEW. Definitions are located with libcst
(exact line ranges of the plugin file, decorators included) and only those lines are
replaced, so everything else in the file — comments, formatting, other definitions —
stays byte-identical. Code without upstream drift is never touched.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rebasekit.analysis.bodies import unified
from rebasekit.analysis.forkdecl import HEADER_RE, ForkInputs
from rebasekit.analysis.forkstate import fork_states
from rebasekit.analysis.merge import three_way
from rebasekit.analysis.overrides import override_drifts
from rebasekit.corpus.models import PluginCorpus
from rebasekit.dedent import dedent
from rebasekit.index import CodeIndex


@dataclass
class PortItem:
    """One merge: an override (``Patch.method``) or a whole forked file."""

    kind: str  # "override" | "fork"
    relpath: str
    name: str
    start: int  # 1-based first line replaced (fork: 1)
    end: int  # last line replaced (fork: last line of the file)
    ours: str  # the text replaced
    merged: str  # the text written instead (conflict markers included)
    conflicts: int
    base: str = ""
    theirs: str = ""


@dataclass
class PortPlan:
    items: list[PortItem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # drifted but not mergeable, with the reason

    @property
    def conflicts(self) -> list[PortItem]:
        return [i for i in self.items if i.conflicts]


def _ensure_nl(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def locate_function(source: str, class_name: str, func_name: str) -> tuple[int, int, int] | None:
    """(first line incl. decorators, last line, indent column) of ``class_name.func_name``."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    found: list[tuple[int, int, int]] = []

    class Finder(cst.CSTVisitor):
        def __init__(self) -> None:
            self.stack: list[str] = []

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            self.stack.append(node.name.value)

        def leave_ClassDef(self, node: cst.ClassDef) -> None:
            self.stack.pop()

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            if self.stack and self.stack[-1] == class_name and node.name.value == func_name:
                pos = positions[node]
                found.append((pos.start.line, pos.end.line, pos.start.column))
            return False

    wrapper.visit(Finder())
    return found[-1] if found else None


def plan_port(corpus: PluginCorpus, base: CodeIndex, new: CodeIndex, forks: ForkInputs) -> PortPlan:
    """Merge every drifted copy; nothing is written here (``commands/portwrite.py`` writes)."""
    plan = PortPlan()
    labels = ("plugin", f"upstream {base.tree.version}", f"upstream {new.tree.version}")
    for od in override_drifts(corpus, base, new):
        where = f"{od.patch.relpath}:{od.patch.name}.{od.attr}"
        if not od.mirrors:
            plan.skipped.append(
                f"{where}: wraps/replaces {od.new_sym.qualname} instead of copying it; review by hand"
            )
            continue
        text = corpus.source_text(od.patch.relpath)
        loc = locate_function(text, od.patch.name, od.attr)
        if loc is None:
            plan.skipped.append(f"{where}: definition not found in the file")
            continue
        start, end, col = loc
        lines = text.splitlines(keepends=True)
        ours_block = "".join(lines[start - 1 : end])
        ours = dedent(ours_block)
        result = three_way(
            _ensure_nl(od.old_def.source), _ensure_nl(ours), _ensure_nl(od.new_def.source), labels
        )
        merged = textwrap.indent(
            result.text, " " * col, lambda ln: ln.strip() != "" and not _marker(ln)
        )
        plan.items.append(
            PortItem(
                "override",
                od.patch.relpath,
                f"{od.patch.name}.{od.attr}",
                start,
                end,
                ours_block,
                merged,
                result.conflicts,
                od.old_def.source,
                od.new_def.source,
            )
        )
    for state in fork_states(corpus, forks, base, new):
        d = state.decl
        if state.drift is None or state.base_text is None or state.drift.missing_upstream:
            if state.base_error or (state.drift and state.drift.missing_upstream):
                plan.skipped.append(
                    f"{d.plugin_relpath}: fork base unavailable or upstream file gone"
                )
            continue
        if not state.drift.changes and not state.drift.module_level_changed:
            continue
        theirs = new.tree.read_text(d.upstream_path)
        result = three_way(
            _ensure_nl(state.base_text), _ensure_nl(state.plugin_text), _ensure_nl(theirs), labels
        )
        merged = result.text
        if result.clean and d.origin == "header":
            merged = _bump_header(merged, new.tree.version or d.version)
        n = len(state.plugin_text.splitlines())
        plan.items.append(
            PortItem(
                "fork",
                d.plugin_relpath,
                d.upstream_path,
                1,
                n,
                state.plugin_text,
                merged,
                result.conflicts,
                state.base_text,
                theirs,
            )
        )
    return plan


def _marker(line: str) -> bool:
    return line.startswith(("<<<<<<< ", "=======", ">>>>>>> ", "||||||| "))


def _bump_header(text: str, version: str) -> str:
    out = []
    for i, line in enumerate(text.splitlines(keepends=True)):
        m = HEADER_RE.match(line.strip()) if i < 10 else None
        if m:
            line = line.replace(f"@{m['version']}", f"@{version}", 1)
        out.append(line)
    return "".join(out)


def render_file(original: str, items: list[PortItem]) -> str:
    """``original`` with every item's lines replaced (bottom-up, so line numbers hold)."""
    lines = original.splitlines(keepends=True)
    for item in sorted(items, key=lambda i: i.start, reverse=True):
        lines[item.start - 1 : item.end] = [_ensure_nl(item.merged)]
    return "".join(lines)


def plan_files(
    corpus: PluginCorpus, plan: PortPlan, include_conflicts: bool = True
) -> dict[str, tuple[str, str]]:
    """relpath -> (current text, ported text) for every file the plan changes."""
    by_file: dict[str, list[PortItem]] = {}
    for item in plan.items:
        if item.conflicts and not include_conflicts:
            continue
        by_file.setdefault(item.relpath, []).append(item)
    out = {}
    for relpath, items in sorted(by_file.items()):
        current = corpus.source_text(relpath)
        ported = render_file(current, items)
        if ported != current:
            out[relpath] = (current, ported)
    return out


def patch_text(files: dict[str, tuple[str, str]]) -> str:
    """A unified diff of all changed files (what ``--dry-run`` prints)."""
    return "".join(unified(cur, new, f"a/{rel}", f"b/{rel}") for rel, (cur, new) in files.items())
