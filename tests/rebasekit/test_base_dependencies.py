"""rebasekit must run from a base install: no vLLM, no torch, nothing undeclared.

The development environment has vLLM and its many dependencies installed, so an import
of an undeclared package (``click``, ``numpy``...) would pass every other test and only
break on a user's machine. This test reads every rebasekit module's imports and checks
each top-level name against the standard library and the base dependencies declared in
``pyproject.toml``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]

# Distribution name -> the import names it provides, where they differ from the name.
# gitdb is GitPython's object database: a hard dependency installed with it.
IMPORT_NAMES = {"gitpython": ("git", "gitdb")}


def _declared_import_names() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set()
    for spec in project["dependencies"]:
        dist = Requirement(spec).name.lower()
        names.update(IMPORT_NAMES.get(dist, (dist.replace("-", "_"),)))
    return names


def _imported_top_levels(path: Path) -> set[tuple[str, int]]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {(alias.name.split(".")[0], node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add((node.module.split(".")[0], node.lineno))
    return found


def test_declared_dependencies_are_what_the_base_install_pulls():
    declared = _declared_import_names()
    assert {"typer", "rich", "libcst", "git", "packaging", "platformdirs"} <= declared
    assert not {"vllm", "torch", "numpy"} & declared


def test_rebasekit_imports_only_stdlib_and_base_dependencies():
    allowed = (
        set(sys.stdlib_module_names) | _declared_import_names() | {"rebasekit", "tomli", "tomllib"}
    )
    offenders = []
    for path in sorted((ROOT / "rebasekit").rglob("*.py")):
        for name, line in sorted(_imported_top_levels(path)):
            if name not in allowed:
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not offenders, "undeclared imports in rebasekit:\n" + "\n".join(offenders)


def _unguarded_tomllib_imports(path: Path) -> list[int]:
    """Lines importing ``tomllib`` outside an ``if sys.version_info ...`` block."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "version_info" in ast.unparse(node.test):
            guarded |= {sub.lineno for sub in ast.walk(node) if isinstance(sub, ast.Import)}
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        and any(a.name == "tomllib" for a in node.names)
        and node.lineno not in guarded
    ]


def test_tomllib_is_imported_with_the_tomli_fallback():
    """requires-python says 3.10, which has no tomllib: every import needs the tomli fallback."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "rebasekit").rglob("*.py"))
        for line in _unguarded_tomllib_imports(path)
    ]
    assert not offenders, "tomllib imported without a Python 3.10 fallback:\n" + "\n".join(
        offenders
    )
