"""Small synthetic plugins and upstream trees for the hostile corpus (built by code).

``project(work)`` writes a plugin project that scans clean against ``tree(work/"up1")``
(version 1.0.0) and has one finding against ``tree(work/"up2", changed=True)`` (2.0.0,
where ``Engine.step`` gained a required parameter). Cases start from these and break one
thing each.
"""

from __future__ import annotations

import json
from pathlib import Path

PLUGIN = "myplug"

_ENGINE = '''\
class Engine:
    """The upstream class the plugin patches."""

    def step(self, batch{extra}):
        return batch

    def stop(self):
        return None
'''

_PATCH = """\
from vllm.engine import Engine

from myplug.patching import Patch


class EnginePatch(Patch[Engine]):
    _orig_step = Engine.step

    def step(self, batch):
        return EnginePatch._orig_step(self, batch)
"""

_MARKER = '''\
from typing import Generic, TypeVar

T = TypeVar("T")


class Patch(Generic[T]):
    """Marker base: class X(Patch[Target]) copies X's attributes onto Target."""
'''

PYPROJECT = f'''\
[project]
name = "{PLUGIN}"
version = "0.1.0"

[project.optional-dependencies]
vllm = ["vllm==1.0.0"]

[tool.rebasekit]
plugin = "{PLUGIN}"
patch-bases = ["Patch"]
'''


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def tree(folder: Path, *, changed: bool = False, engine_prefix: str = "") -> Path:
    """An upstream source folder holding a tiny ``vllm`` package; returns ``folder``."""
    version = "2.0.0" if changed else "1.0.0"
    write(
        folder,
        {
            "vllm/__init__.py": f'__version__ = "{version}"\n',
            "vllm/version.py": f'__version__ = "{version}"\n',
            "vllm/engine.py": engine_prefix + _ENGINE.format(extra=", mode" if changed else ""),
        },
    )
    return folder


def project(work: Path, *, pyproject: str = PYPROJECT) -> Path:
    """The plugin project at ``work`` (pyproject + package); returns the package folder."""
    write(
        work,
        {
            "pyproject.toml": pyproject,
            f"{PLUGIN}/__init__.py": '"""A synthetic plugin."""\n',
            f"{PLUGIN}/patching.py": _MARKER,
            f"{PLUGIN}/engine_patch.py": _PATCH,
        },
    )
    return work / PLUGIN


def lock(work: Path, document: object | str) -> None:
    """``rebasekit.lock.json`` next to the pyproject: raw text, or a JSON document."""
    text = document if isinstance(document, str) else json.dumps(document)
    (work / "rebasekit.lock.json").write_text(text, encoding="utf-8")
