"""Derive "which tests exercise which plugin module" from the test suite itself.

A hand-kept list goes stale the first time someone adds a test; the suite already says
what it touches. A test file is linked to a plugin module when it imports it (or a name
from it), names it in a string (``monkeypatch.setattr("pkg.mod.f", ...)``,
``importlib.import_module``), or is named after it (``test_<module>.py``). Markers and
the folder decide whether a file needs a GPU; :mod:`rebasekit.runbook.e2e` decides whether
it builds an engine (and so is end-to-end) and which features it drives.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from rebasekit.errors import InputError
from rebasekit.runbook.e2e import EngineUse, engine_use
from rebasekit.sourcefile import read_source_text

_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)+$")


@dataclass
class TestFile:
    """What one test file touches: plugin modules, imported names, markers, test names."""

    path: str  # relative to the project root, posix
    modules: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)  # names imported from plugin modules
    strings: set[str] = field(default_factory=set)  # dotted plugin names in string literals
    markers: set[str] = field(default_factory=set)
    tests: list[str] = field(default_factory=list)
    engine: EngineUse | None = None  # set by scan_tests when the file builds an engine

    @property
    def stem(self) -> str:
        return Path(self.path).stem

    @property
    def needs_gpu(self) -> bool:
        return "gpu" in self.markers or "/gpu/" in f"/{self.path}"


def _marker_names(node: ast.expr) -> set[str]:
    """``pytest.mark.gpu`` / ``pytest.mark.gpu(...)`` / lists of them -> {"gpu"}."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Attribute)
            and sub.value.attr == "mark"
        ):
            found.add(sub.attr)
    return found


def parse_test_file(path: Path, rel: str, plugin: str) -> TestFile:
    """Facts of one test file; a file that does not parse yields only its path."""
    info = TestFile(rel)
    try:
        tree = ast.parse(read_source_text(path))
    except (SyntaxError, ValueError, OSError):  # OSError: not a regular file, or over the size cap
        return info
    prefix = plugin + "."
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            info.modules.update(
                a.name for a in node.names if a.name == plugin or a.name.startswith(prefix)
            )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == plugin or node.module.startswith(prefix):
                info.modules.add(node.module)
                for alias in node.names:
                    info.modules.add(f"{node.module}.{alias.name}")  # maybe a submodule
                    info.names.add(alias.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.split(":")[0]
            if text.startswith(prefix) and _DOTTED.match(text):
                info.strings.add(text)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for deco in node.decorator_list:
                info.markers |= _marker_names(deco)
            if node.name.startswith(("test", "Test")):
                info.tests.append(node.name)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            info.markers |= _marker_names(node.value)
    return info


def scan_tests(root: Path, tests_dir: str, plugin: str) -> list[TestFile]:
    """Every ``test_*.py`` / ``*_test.py`` under ``root/tests_dir``, in path order."""
    base = root / tests_dir
    if not base.is_dir():
        raise InputError(
            f"--tests {tests_dir}: no such folder under {root}",
            hint="pass --tests with the project's test folder (relative to --project)",
        )
    files = sorted(
        p for p in base.rglob("*.py") if p.name.startswith("test_") or p.name.endswith("_test.py")
    )
    suite = []
    for path in files:
        info = parse_test_file(path, path.relative_to(root).as_posix(), plugin)
        info.engine = engine_use(path, root, base)
        suite.append(info)
    if not suite:
        raise InputError(
            f"--tests {tests_dir}: no test_*.py or *_test.py file under {base}",
            hint="pass --tests with the folder that holds the project's tests",
        )
    return suite


def module_of(relpath: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod`` (``__init__`` names its package)."""
    parts = relpath[:-3].split("/") if relpath.endswith(".py") else relpath.split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _touches(module: str, dotted: str) -> bool:
    return dotted == module or dotted.startswith(module + ".")


@dataclass(frozen=True)
class Link:
    """A test file linked to a change, and why (so a reader can judge the link)."""

    test: str
    reason: str
    gpu: bool


def tests_for_module(module: str, suite: list[TestFile]) -> list[Link]:
    """Test files that exercise ``module``, strongest evidence first."""
    leaf = module.rsplit(".", 1)[-1]
    links: list[Link] = []
    for tf in suite:
        if any(_touches(module, m) for m in tf.modules):
            reason = "imports " + module
        elif any(_touches(module, s) for s in tf.strings):
            reason = "names " + module + " in a string"
        elif leaf != "__init__" and (
            tf.stem == f"test_{leaf}" or tf.stem.startswith(f"test_{leaf}_")
        ):
            reason = f"named after {leaf}"
        else:
            continue
        links.append(Link(tf.path, reason, tf.needs_gpu))
    return links


def tests_for_symbol(symbol: str, suite: list[TestFile]) -> list[Link]:
    """Test files that import the patch class or have tests named after the member."""
    head, _, member = symbol.partition(".")
    last = member.rsplit(".", 1)[-1] if member else ""
    # Dunder members (__init__, __getattr__) name no behaviour a test would be named after.
    member_key = "" if last.startswith("__") else last.strip("_").lower()
    links: list[Link] = []
    for tf in suite:
        if head in tf.names:
            links.append(Link(tf.path, f"imports {head}", tf.needs_gpu))
        elif member_key and len(member_key) > 3 and any(member_key in t.lower() for t in tf.tests):
            links.append(Link(tf.path, f"has tests named after {member_key}", tf.needs_gpu))
    return links


def merge_links(*groups: list[Link]) -> list[Link]:
    """Union of link lists, one link per test file (the first reason wins)."""
    seen: dict[str, Link] = {}
    for group in groups:
        for link in group:
            seen.setdefault(link.test, link)
    return list(seen.values())
