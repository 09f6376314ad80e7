"""A cache that cannot run code or crash the tool: planted, random, edited or foreign entries
are rebuilt; cached trees are checked by content hash; versions have one spelling."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from safety_helpers import cli

from rebasekit.errors import CacheError, InputError
from rebasekit.index import CodeIndex, FactsCache
from rebasekit.index.cache import DataStore, facts_key
from rebasekit.index.models import ModuleFacts
from rebasekit.upstream import open_tree, wheels

FIX = Path(__file__).parent / "fixtures"
PLUGIN = FIX / "plugin" / "tinyplug"
NEW = FIX / "upstream_new"
RELPATH = "vllm/engine/core.py"


class _Planted:
    """Unpickling this runs ``os.system`` (what a hostile shared cache would hold)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _facts_entry(cache_dir: Path) -> tuple[CodeIndex, Path]:
    """An index over the fixture tree whose one cached module entry is returned as a path."""
    index = CodeIndex(open_tree(str(NEW)), FactsCache(cache_dir))
    assert index.module("vllm.engine.core") is not None
    key = facts_key(RELPATH, (NEW / RELPATH).read_bytes())
    path = index.cache._store.path(key)
    assert path.is_file()
    return index, path


def _fresh_lookup(cache_dir: Path) -> tuple[ModuleFacts | None, int]:
    index = CodeIndex(open_tree(str(NEW)), FactsCache(cache_dir))
    facts = index.module("vllm.engine.core")
    return facts, index.parsed


def test_planted_pickle_is_never_executed(tmp_path):
    _, entry = _facts_entry(tmp_path / "c")
    marker = tmp_path / "pwned"
    entry.write_bytes(pickle.dumps(_Planted(marker)))
    facts, parsed = _fresh_lookup(tmp_path / "c")
    assert not marker.exists()
    assert parsed == 1 and facts is not None and "Engine" in facts.defs  # rebuilt from source
    # the rebuilt entry replaced the planted one and is used from then on
    assert _fresh_lookup(tmp_path / "c")[1] == 0


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: os.urandom(4096), id="random-bytes"),
        pytest.param(lambda data: b"\x80\x05" + b"\xff" * 64, id="pickle-header-garbage"),
        pytest.param(
            lambda data: b"\x80\x05\x8e" + (2**60).to_bytes(8, "little"), id="pickle-huge-length"
        ),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(
            lambda data: data.replace(b'"schema": 1', b'"schema": 99', 1), id="other-schema"
        ),
        pytest.param(lambda data: data.replace(b'"Engine"', b'"Enginf"'), id="payload-edited"),
        pytest.param(lambda data: b"[" * 100000 + b"\n" + b"]" * 100000, id="deeply-nested"),
    ],
)
def test_bad_entries_are_rebuilt(tmp_path, damage):
    _, entry = _facts_entry(tmp_path / "c")
    damaged = damage(entry.read_bytes())
    assert damaged != entry.read_bytes()
    entry.write_bytes(damaged)
    facts, parsed = _fresh_lookup(tmp_path / "c")
    assert parsed == 1 and facts is not None
    assert "Engine" in facts.defs and "Enginf" not in facts.defs


def test_an_entry_for_another_key_is_not_trusted(tmp_path):
    store = DataStore(tmp_path)
    store.save("aa" * 32, {"x": 1})
    other = store.path("bb" * 32)
    other.parent.mkdir(parents=True)
    other.write_bytes(store.path("aa" * 32).read_bytes())  # a valid entry, moved to the wrong key
    assert store.load("bb" * 32, "miss") == "miss"
    assert store.load("aa" * 32) == {"x": 1}


def test_an_entry_naming_an_unlisted_class_is_a_miss(tmp_path):
    store = DataStore(tmp_path)
    payload = json.dumps({"c": "os:system", "f": {}}).encode()
    header = json.dumps(
        {"schema": 1, "key": "cc" * 32, "sha256": hashlib.sha256(payload).hexdigest()}
    )
    path = store.path("cc" * 32)
    path.parent.mkdir(parents=True)
    path.write_bytes(header.encode() + b"\n" + payload)
    assert store.load("cc" * 32, "miss") == "miss"


def test_cached_facts_round_trip_exactly(tmp_path):
    index, _ = _facts_entry(tmp_path / "c")
    cold = index.module("vllm.engine.core")
    warm, parsed = _fresh_lookup(tmp_path / "c")
    assert parsed == 0 and warm == cold


# -- cached release trees ----------------------------------------------------------------


def _wheel(folder: Path, version: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    info = f"vllm-{version}.dist-info"
    with zipfile.ZipFile(folder / f"vllm-{version}-py3-none-any.whl", "w") as zf:
        for file in sorted((NEW / "vllm").rglob("*.py")):
            zf.write(file, file.relative_to(NEW).as_posix())
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
        zf.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        zf.writestr(f"{info}/RECORD", "")


@pytest.fixture
def registry(tmp_path, monkeypatch) -> Path:
    """pip pointed at a folder with one wheel (vllm 2.0.0); returns the trees cache folder."""
    _wheel(tmp_path / "wheels", "2.0.0")
    monkeypatch.setenv("REBASEKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    return tmp_path / "cache" / "trees"


def test_short_and_long_version_are_one_cache_entry(registry):
    short = open_tree("2.0")
    assert short.version == "2.0.0" and short.root == registry / "vllm-2.0.0"
    assert open_tree("2.0.0").root == short.root and open_tree("v2.0.0").root == short.root
    assert sorted(p.name for p in registry.iterdir()) == ["vllm-2.0.0"]


def test_same_size_edit_in_a_cached_tree_is_caught(registry):
    tree = open_tree("2.0.0")
    core = tree.root / RELPATH
    data = core.read_bytes()
    core.write_bytes(data.replace(b"class ", b"klass ", 1))  # same length, other content
    assert core.stat().st_size == len(data)
    with pytest.raises(CacheError, match="changed"):
        open_tree("2.0.0")


def test_stale_scratch_of_a_killed_download_is_removed(registry):
    registry.mkdir(parents=True)
    dead = registry / f"{wheels.SCRATCH_PREFIX}999999999-abc"  # no such process
    (dead / "tree" / "vllm").mkdir(parents=True)
    live = registry / f"{wheels.SCRATCH_PREFIX}{os.getpid()}-xyz"  # a download still running
    live.mkdir()
    open_tree("2.0.0")
    assert not dead.exists() and live.exists()
    assert sorted(p.name for p in registry.iterdir()) == sorted([live.name, "vllm-2.0.0"])


def test_failed_download_leaves_no_scratch(registry, monkeypatch):
    def boom(*args):
        raise KeyboardInterrupt  # what Ctrl-C (or SIGTERM, turned into SystemExit) does mid-extract

    monkeypatch.setattr(wheels, "_extract", boom)
    with pytest.raises(KeyboardInterrupt):
        open_tree("2.0.0")
    assert list(registry.iterdir()) == []


def _manifest_with(**fields) -> str:
    return json.dumps(
        {"format": wheels.MANIFEST_FORMAT, "count": 1, "bytes": 0, "sha256": "", **fields}
    )


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param(lambda: "{", id="truncated"),
        pytest.param(lambda: "[]", id="a-list"),
        pytest.param(lambda: "\xff", id="not-utf8"),
        pytest.param(lambda: _manifest_with(files=["vllm/__init__.py"]), id="files-a-list"),
        pytest.param(
            lambda: _manifest_with(files={"vllm/__init__.py": None}), id="file-entry-null"
        ),
        pytest.param(
            lambda: _manifest_with(files={"../../etc/passwd": "0" * 64}), id="path-escapes"
        ),
    ],
)
def test_corrupt_manifest_is_a_clear_error(registry, manifest):
    tree = open_tree("2.0.0")
    (tree.root / wheels.MANIFEST).write_bytes(manifest().encode("latin-1"))
    res = cli("scan", "--plugin", PLUGIN, "--vllm-version", "2.0.0")
    assert res.exit_code == 2, res.output
    assert "manifest" in res.output and str(tree.root) in res.output


def test_cache_folder_that_is_a_file_is_a_clear_error(tmp_path, monkeypatch):
    (tmp_path / "cache").write_text("not a folder")
    monkeypatch.setenv("REBASEKIT_CACHE_DIR", str(tmp_path / "cache"))
    res = cli("scan", "--plugin", PLUGIN, "--vllm-version", "2.0.0")
    assert res.exit_code == 2 and "cannot use the cache folder" in res.output


def test_a_folder_given_to_vllm_version_is_refused():
    res = cli("scan", "--plugin", PLUGIN, "--vllm-version", NEW)
    assert res.exit_code == 2
    assert "not a release number" in res.output and f"--vllm {NEW}" in res.output


def test_normalise_version():
    assert wheels.normalise_version("0.26") == wheels.normalise_version("0.26.0") == "0.26.0"
    assert wheels.normalise_version("0.27.0rc1") == "0.27.0rc1"
    with pytest.raises(InputError):
        wheels.normalise_version("latest")


_SLOW_DOWNLOAD = """
import sys, time
from pathlib import Path
from rebasekit.upstream import open_tree, wheels

def slow_extract(wheel, staging, package):
    staging.mkdir(parents=True)
    (staging / "partial.py").write_text("x = 1\\n")
    print("extracting", flush=True)
    time.sleep(120)

wheels._extract = slow_extract
open_tree("2.0.0")
"""


def _start_slow_download() -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_DOWNLOAD],
        stdout=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "extracting"
    return proc


def test_terminated_download_removes_its_scratch(registry):
    proc = _start_slow_download()
    assert [p.name.startswith(wheels.SCRATCH_PREFIX) for p in registry.iterdir()] == [True]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) != 0
    assert list(registry.iterdir()) == []


def test_killed_download_scratch_is_removed_by_the_next_run(registry):
    proc = _start_slow_download()
    proc.kill()  # SIGKILL: no cleanup can run in the dying process
    proc.wait(timeout=60)
    assert len(list(registry.glob(wheels.SCRATCH_PREFIX + "*"))) == 1
    assert open_tree("2.0.0").version == "2.0.0"
    assert sorted(p.name for p in registry.iterdir()) == ["vllm-2.0.0"]


def _settle_now(monkeypatch) -> None:
    """Files written a moment ago count as settled, as they would minutes later."""
    monkeypatch.setattr(wheels.stamps, "SETTLE_NS", -(10**12))


def _hashed_files(monkeypatch) -> list[str]:
    """The cached-tree files whose bytes :func:`wheels.verify` reads from now on."""
    read: list[str] = []
    real = Path.read_bytes

    def spy(path: Path) -> bytes:
        read.append(path.name)
        return real(path)

    monkeypatch.setattr(Path, "read_bytes", spy)
    return read


def test_unchanged_stamped_files_are_not_hashed_again(registry, monkeypatch):
    _settle_now(monkeypatch)
    first = open_tree("2.0.0")
    stamps_file = first.root / wheels.stamps.STAMPS
    assert RELPATH in json.loads(stamps_file.read_text())["files"]
    read = _hashed_files(monkeypatch)
    again = open_tree("2.0.0")
    assert read == [] and again.fingerprint == first.fingerprint


def test_fresh_files_are_not_stamped(registry):
    tree = open_tree("2.0.0")  # just extracted: its files changed within SETTLE_NS
    assert (tree.root / RELPATH).is_file()
    assert not (tree.root / wheels.stamps.STAMPS).exists()


@pytest.mark.parametrize("keep_mtime", [False, True], ids=["plain-edit", "mtime-restored"])
def test_edit_of_a_stamped_file_is_caught(registry, monkeypatch, keep_mtime):
    _settle_now(monkeypatch)
    tree = open_tree("2.0.0")
    core = tree.root / RELPATH
    before = core.stat()
    data = core.read_bytes()
    core.write_bytes(data.replace(b"class ", b"klass ", 1))  # same length, other content
    if keep_mtime:  # what ``touch -r`` does: ctime still moves, so the stamp no longer fits
        os.utime(core, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert core.stat().st_size == before.st_size
    with pytest.raises(CacheError, match="changed"):
        open_tree("2.0.0")


def test_stamps_claiming_another_hash_are_not_trusted(registry, monkeypatch):
    _settle_now(monkeypatch)
    tree = open_tree("2.0.0")
    core = tree.root / RELPATH
    core.write_bytes(core.read_bytes().replace(b"class ", b"klass ", 1))
    stamps_file = tree.root / wheels.stamps.STAMPS
    data = json.loads(stamps_file.read_text())
    fake = hashlib.sha256(core.read_bytes()).hexdigest()  # the edited file's own hash
    st = core.stat()
    data["files"][RELPATH] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, fake]
    stamps_file.write_text(json.dumps(data))
    with pytest.raises(CacheError, match="changed"):
        open_tree("2.0.0")


@pytest.mark.parametrize("text", ["{", "[]", '{"format": 1, "tree": "x", "files": {}}', "\xff"])
def test_damaged_stamps_mean_hashing_everything(registry, monkeypatch, text):
    _settle_now(monkeypatch)
    tree = open_tree("2.0.0")
    (tree.root / wheels.stamps.STAMPS).write_bytes(text.encode("latin-1"))
    read = _hashed_files(monkeypatch)
    assert open_tree("2.0.0").fingerprint == tree.fingerprint
    assert RELPATH.rsplit("/", 1)[-1] in read
