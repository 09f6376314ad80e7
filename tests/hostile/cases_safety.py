"""Hostile inputs for the cache, the writes and the input hygiene, as plain data.

Each case is a dict:

* ``name``: a stable slug;
* ``setup``: ``callable(tmp_path) -> dict`` building the inputs under ``tmp_path``; the
  dict may hold ``env`` (variables to set for the run, values may use ``{tmp}``);
* ``argv``: rebasekit's arguments, ``{tmp}`` standing for ``tmp_path``;
* ``exit_code``: the expected exit code (0 clean, 1 findings, 2 bad input/incomplete);
* ``message``: a substring expected in stdout or stderr;
* ``unchanged``: paths relative to ``tmp_path`` that must be byte-identical afterwards;
* ``absent`` (optional): paths relative to ``tmp_path`` that must not exist afterwards.

Everything is generated here from the test fixtures; no binary is kept in the repository.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git

FIXTURES = Path(__file__).resolve().parents[1] / "rebasekit"
TINY = FIXTURES / "fixtures"
DEEP = FIXTURES / "fixtures_deep"
DEEP_PORT = [
    "port",
    "--to",
    "{tmp}/fx/upstream_new",
    "--from",
    "{tmp}/fx/upstream_old",
    "--plugin",
    "{tmp}/fx/plugin/deepplug",
]
DEEP_PLUGIN_FILES = [
    f"fx/plugin/deepplug/{p.name}" for p in sorted((DEEP / "plugin" / "deepplug").glob("*.py"))
]
CAP = 2 * 1024 * 1024  # the documented per-file size cap


class _Planted:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _copy_deep(tmp: Path) -> Path:
    shutil.copytree(DEEP, tmp / "fx")
    return tmp / "fx"


def _repo(path: Path) -> git.Repo:
    repo = git.Repo.init(path)
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "t")
        cfg.set_value("user", "email", "t@example.com")
    repo.git.add(A=True)
    repo.index.commit("init")
    return repo


def _cache_env(tmp: Path) -> dict[str, Any]:
    return {"env": {"REBASEKIT_CACHE_DIR": "{tmp}/cache"}}


def _plant_in_every_entry(tmp: Path, payload: bytes) -> dict[str, Any]:
    """``payload`` at the cache path of every module of the tiny upstream tree (old and new layout)."""
    from rebasekit.index.cache import facts_key
    from rebasekit.index.models import FACTS_FORMAT

    tree = TINY / "upstream_new"
    for version in range(1, FACTS_FORMAT + 1):  # every layout, so older sources read it too
        facts = tmp / "cache" / "index" / f"facts-v{version}"
        for path in sorted(tree.rglob("*.py")):
            key = facts_key(path.relative_to(tree).as_posix(), path.read_bytes())
            for suffix in (".json", ".pkl"):
                entry = facts / key[:2] / f"{key}{suffix}"
                entry.parent.mkdir(parents=True, exist_ok=True)
                entry.write_bytes(payload)
    return _cache_env(tmp)


def _setup_planted_pickle(tmp: Path) -> dict[str, Any]:
    return _plant_in_every_entry(tmp, pickle.dumps(_Planted(str(tmp / "pwned"))))


def _setup_random_bytes(tmp: Path) -> dict[str, Any]:
    return _plant_in_every_entry(tmp, os.urandom(8192))


def _setup_huge_pickle(tmp: Path) -> dict[str, Any]:
    return _plant_in_every_entry(tmp, b"\x80\x05\x8e" + (2**60).to_bytes(8, "little"))


def _setup_conflict_markers(tmp: Path) -> dict[str, Any]:
    runner = _copy_deep(tmp) / "plugin" / "deepplug" / "runner.py"
    runner.write_text(
        runner.read_text() + "<<<<<<< plugin\nA = 1\n=======\nA = 2\n>>>>>>> upstream\n"
    )
    return {}


def _setup_dirty_git(tmp: Path) -> dict[str, Any]:
    fx = _copy_deep(tmp)
    _repo(fx)
    runner = fx / "plugin" / "deepplug" / "runner.py"
    runner.write_text(runner.read_text() + "\n# work in progress\n")
    return {}


def _setup_foreign_notes(tmp: Path) -> dict[str, Any]:
    (tmp / "NOTES.md").write_text("# my own notes\n")
    (tmp / "repo").mkdir()
    (tmp / "repo" / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    _repo(tmp / "repo")
    return {}


def _setup_runbook_project(tmp: Path) -> dict[str, Any]:
    proj = tmp / "proj"
    (proj / "plug").mkdir(parents=True)
    (proj / "pyproject.toml").write_text(
        '[project]\nname = "plug"\n[tool.rebasekit]\nplugin = "plug"\n'
        'patch-bases = ["ArcticPatch"]\n'
    )
    (proj / "plug" / "__init__.py").write_text("")
    for name in ("old", "new"):
        (tmp / name / "vllm").mkdir(parents=True)
        (tmp / name / "vllm" / "__init__.py").write_text("")
    _repo(proj)
    (tmp / "victim.txt").write_text("precious\n")
    (tmp / "NOTES.md").write_text("# my own notes\n")
    return {}


def _setup_git_upstream(tmp: Path) -> dict[str, Any]:
    shutil.copytree(TINY / "upstream_new" / "vllm", tmp / "up" / "vllm")
    _repo(tmp / "up")
    (tmp / "victim.txt").write_text("precious\n")
    return {}


def _setup_corrupt_git_object(tmp: Path) -> dict[str, Any]:
    _setup_git_upstream(tmp)
    repo = git.Repo(tmp / "up")
    blob = repo.head.commit.tree / "vllm" / "engine" / "core.py"
    obj = tmp / "up" / ".git" / "objects" / blob.hexsha[:2] / blob.hexsha[2:]
    obj.chmod(0o644)
    obj.write_bytes(b"\x78\x9c not zlib at all")
    return {}


def _hostile_files(folder: Path) -> None:
    os.mkfifo(folder / "pipe.py")
    (folder / "folder.py").mkdir()
    (folder / "dangling.py").symlink_to(folder / "nowhere.py")
    (folder / "zero.py").symlink_to("/dev/zero")
    (folder / "big.py").write_bytes(b"X = 1\n" + b"#" * CAP)


def _setup_hostile_plugin(tmp: Path) -> dict[str, Any]:
    shutil.copytree(TINY / "plugin" / "tinyplug", tmp / "tinyplug")
    _hostile_files(tmp / "tinyplug")
    return {}


def _setup_hostile_tree(tmp: Path) -> dict[str, Any]:
    shutil.copytree(TINY / "upstream_new", tmp / "up")
    _hostile_files(tmp / "up" / "vllm")
    return {}


def _setup_latin1_plugin(tmp: Path) -> dict[str, Any]:
    fx = _copy_deep(tmp)
    for path in (fx / "plugin" / "deepplug").glob("*.py"):
        text = "# -*- coding: latin-1 -*-\n# r\u00e9sum\u00e9\n" + path.read_text(encoding="utf-8")
        path.write_bytes(text.encode("latin-1"))
    return {}


def _manifested_tree(tmp: Path) -> Path:
    """A cached release tree ``vllm-9.9.9`` with a valid manifest (as a download leaves it)."""
    dest = tmp / "cache" / "trees" / "vllm-9.9.9"
    shutil.copytree(TINY / "upstream_new" / "vllm", dest / "vllm")
    files = {
        p.relative_to(dest).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(dest.rglob("*.py"))
    }
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + bytes.fromhex(files[rel]))
    manifest = {
        "format": 2,
        "count": len(files),
        "bytes": 0,
        "sha256": digest.hexdigest(),
        "files": files,
    }
    (dest / ".rebasekit-manifest.json").write_text(json.dumps(manifest))
    return dest


def _setup_same_size_edit(tmp: Path) -> dict[str, Any]:
    core = _manifested_tree(tmp) / "vllm" / "engine" / "core.py"
    data = core.read_bytes()
    core.write_bytes(data.replace(b"class ", b"klass ", 1))
    return _cache_env(tmp)


def _setup_corrupt_manifest(tmp: Path) -> dict[str, Any]:
    dest = _manifested_tree(tmp)
    (dest / ".rebasekit-manifest.json").write_text(
        '{"format": 2, "count": 1, "sha256": "", "files": ["x"]}'
    )
    return _cache_env(tmp)


def _setup_cache_is_a_file(tmp: Path) -> dict[str, Any]:
    (tmp / "cache").write_text("not a folder\n")
    return _cache_env(tmp)


TINY_SCAN = [
    "scan-imports",
    "--plugin",
    str(TINY / "plugin" / "tinyplug"),
    "--vllm",
    str(TINY / "upstream_new"),
]

CASES: list[dict[str, Any]] = [
    # -- cache: nothing read from it is trusted or run ------------------------------------
    {
        "name": "cache-planted-pickle",
        "setup": _setup_planted_pickle,
        "argv": TINY_SCAN,
        "exit_code": 1,
        "message": "RK1",
        "unchanged": [],
        "absent": ["pwned"],
    },
    {
        "name": "cache-random-bytes",
        "setup": _setup_random_bytes,
        "argv": TINY_SCAN,
        "exit_code": 1,
        "message": "RK1",
        "unchanged": [],
    },
    {
        "name": "cache-pickle-huge-length",
        "setup": _setup_huge_pickle,
        "argv": TINY_SCAN,
        "exit_code": 1,
        "message": "RK1",
        "unchanged": [],
    },
    {
        "name": "cached-tree-same-size-edit",
        "setup": _setup_same_size_edit,
        "argv": [
            "scan-imports",
            "--plugin",
            str(TINY / "plugin" / "tinyplug"),
            "--vllm-version",
            "9.9.9",
        ],
        "exit_code": 2,
        "message": "its hash differs from the manifest",
        "unchanged": [],
    },
    {
        "name": "cached-tree-corrupt-manifest",
        "setup": _setup_corrupt_manifest,
        "argv": [
            "scan-imports",
            "--plugin",
            str(TINY / "plugin" / "tinyplug"),
            "--vllm-version",
            "9.9.9",
        ],
        "exit_code": 2,
        "message": "corrupt manifest",
        "unchanged": [],
    },
    {
        "name": "cache-folder-is-a-file",
        "setup": _setup_cache_is_a_file,
        "argv": [
            "scan-imports",
            "--plugin",
            str(TINY / "plugin" / "tinyplug"),
            "--vllm-version",
            "9.9.9",
        ],
        "exit_code": 2,
        "message": "cannot use the cache folder",
        "unchanged": ["cache"],
    },
    {
        "name": "vllm-version-given-a-folder",
        "setup": lambda tmp: {},
        "argv": [
            "scan",
            "--plugin",
            str(TINY / "plugin" / "tinyplug"),
            "--vllm-version",
            str(TINY / "upstream_new"),
        ],
        "exit_code": 2,
        "message": "not a release number",
        "unchanged": [],
    },
    # -- writes: never lose work -----------------------------------------------------------
    {
        "name": "port-leftover-conflict-markers",
        "setup": _setup_conflict_markers,
        "argv": DEEP_PORT,
        "exit_code": 2,
        "message": "unresolved conflict markers",
        "unchanged": DEEP_PLUGIN_FILES,
    },
    {
        "name": "port-uncommitted-changes",
        "setup": _setup_dirty_git,
        "argv": DEEP_PORT,
        "exit_code": 2,
        "message": "uncommitted changes",
        "unchanged": DEEP_PLUGIN_FILES,
    },
    {
        "name": "compare-pins-write-foreign-file",
        "setup": _setup_foreign_notes,
        "argv": ["compare-pins", "--repo", "{tmp}/repo", "--write", "{tmp}/NOTES.md"],
        "exit_code": 2,
        "message": "not generated by rebasekit",
        "unchanged": ["NOTES.md"],
    },
    {
        "name": "runbook-write-foreign-file",
        "setup": _setup_runbook_project,
        "argv": [
            "runbook",
            "--from",
            "{tmp}/old",
            "--to",
            "{tmp}/new",
            "--project",
            "{tmp}/proj",
            "--write",
            "{tmp}/NOTES.md",
        ],
        "exit_code": 2,
        "message": "not generated by rebasekit",
        "unchanged": ["NOTES.md"],
    },
    # -- input hygiene ---------------------------------------------------------------------
    {
        "name": "runbook-changed-since-option-injection",
        "setup": _setup_runbook_project,
        "argv": [
            "runbook",
            "--from",
            "{tmp}/old",
            "--to",
            "{tmp}/new",
            "--project",
            "{tmp}/proj",
            "--changed-since=--output={tmp}/victim.txt",
        ],
        "exit_code": 2,
        "message": "not a git ref",
        "unchanged": ["victim.txt"],
    },
    {
        "name": "vllm-git-ref-option-injection",
        "setup": _setup_git_upstream,
        "argv": [
            "scan-imports",
            "--plugin",
            str(TINY / "plugin" / "tinyplug"),
            "--vllm-git",
            "{tmp}/up@--output={tmp}/victim.txt",
        ],
        "exit_code": 2,
        "message": "not a git ref",
        "unchanged": ["victim.txt"],
    },
    {
        "name": "corrupt-git-object",
        "setup": _setup_corrupt_git_object,
        "argv": [
            "scan-imports",
            "--plugin",
            str(TINY / "plugin" / "tinyplug"),
            "--vllm-git",
            "{tmp}/up@HEAD",
        ],
        "exit_code": 2,
        "message": "git fsck",
        "unchanged": [],
    },
    # Skipped files are "incomplete": exit 2 once degradations are surfaced by the exit policy.
    {
        "name": "plugin-pipe-devzero-dangling-folder-oversized",
        "setup": _setup_hostile_plugin,
        "argv": ["scan", "--plugin", "{tmp}/tinyplug", "--vllm", str(TINY / "upstream_new")],
        "exit_code": 2,
        "message": "skipped",
        "unchanged": ["tinyplug/big.py"],
    },
    {
        "name": "tree-pipe-devzero-dangling-folder-oversized",
        "setup": _setup_hostile_tree,
        "argv": ["scan", "--plugin", str(TINY / "plugin" / "tinyplug"), "--vllm", "{tmp}/up"],
        "exit_code": 2,
        "message": "skipped",
        "unchanged": ["up/vllm/big.py"],
    },
    {
        "name": "latin1-plugin-with-coding-cookie",
        "setup": _setup_latin1_plugin,
        "argv": [
            "scan",
            "--plugin",
            "{tmp}/fx/plugin/deepplug",
            "--from",
            "{tmp}/fx/upstream_old",
            "--to",
            "{tmp}/fx/upstream_new",
        ],
        "exit_code": 1,
        "message": "RK402",
        "unchanged": DEEP_PLUGIN_FILES,
    },
]

SETUPS: dict[str, Callable[[Path], dict[str, Any]]] = {
    case["name"]: case["setup"] for case in CASES
}
