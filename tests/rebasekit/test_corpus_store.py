"""The whole-plugin corpus cache: a hit is the extraction itself, every input misses."""

from __future__ import annotations

import ast
import os
import shutil
from pathlib import Path

import pytest

from rebasekit.analysis.pluginclasses import plugin_classes, replaced_names
from rebasekit.corpus import extract_corpus, store
from rebasekit.corpus.models import PluginCorpus
from rebasekit.index.cache import DataStore

BUNDLED = Path(__file__).resolve().parents[2] / "arctic_inference"
BASES = ("ArcticPatch",)
ENTRY = ("arctic_inference.vllm.plugin:arctic_inference_plugin",)


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    dest = tmp_path / "src" / "arctic_inference"
    shutil.copytree(BUNDLED, dest, ignore=shutil.ignore_patterns("*.so", "__pycache__", "csrc"))
    return dest


@pytest.fixture
def extractions(monkeypatch) -> list[Path]:
    """Every real extraction the cache runs (a hit runs none)."""
    calls: list[Path] = []
    real = store.extract_corpus

    def counted(plugin_dir, *args, **kwargs):
        calls.append(plugin_dir)
        return real(plugin_dir, *args, **kwargs)

    monkeypatch.setattr(store, "extract_corpus", counted)
    return calls


def _load(cache: DataStore, plugin: Path, **changes) -> PluginCorpus:
    inputs = {
        "patch_bases": BASES,
        "upstream_package": "vllm",
        "platform_functions": ENTRY,
        "subpackage_pins": {},
        **changes,
    }
    return store.cached_corpus(cache, plugin, **inputs)


def test_hit_equals_a_fresh_extraction(tmp_path, plugin, extractions):
    cache = DataStore(tmp_path / "cache")
    cold = _load(cache, plugin)
    warm = _load(cache, plugin)
    assert len(extractions) == 1
    fresh = extract_corpus(plugin, BASES, "vllm", ENTRY)
    assert len(fresh.patches) > 10  # the bundled plugin's patch classes
    assert warm.to_dict() == fresh.to_dict() == cold.to_dict()
    assert warm.sources == fresh.sources and warm.comments == fresh.comments
    assert warm.modules == {}  # trees are not stored: parsed on first use
    assert warm.parsed_relpaths() == sorted(fresh.modules)
    relpath = fresh.patches[0].relpath
    assert ast.dump(warm.module(relpath)) == ast.dump(fresh.module(relpath))


def test_analyses_over_all_files_see_every_file_of_a_cached_corpus(tmp_path, plugin):
    cache = DataStore(tmp_path / "cache")
    _load(cache, plugin)
    warm = _load(cache, plugin)
    fresh = extract_corpus(plugin, BASES, "vllm", ENTRY)
    names = [(c.name, c.relpath, c.upstream) for c in plugin_classes(fresh)]
    assert names and [(c.name, c.relpath, c.upstream) for c in plugin_classes(warm)] == names
    assert replaced_names(warm) == replaced_names(fresh)


@pytest.mark.parametrize(
    "change",
    [
        {"patch_bases": ("OtherPatch",)},
        {"upstream_package": "vllm_other"},
        {"platform_functions": ()},
        {"subpackage_pins": {"arctic_inference/embedding/": "0.9.2"}},
    ],
    ids=["patch-bases", "upstream-package", "entry-points", "subpackage-pins"],
)
def test_every_setting_is_part_of_the_key(tmp_path, plugin, extractions, change):
    cache = DataStore(tmp_path / "cache")
    _load(cache, plugin)
    _load(cache, plugin, **change)
    assert len(extractions) == 2
    _load(cache, plugin, **change)
    assert len(extractions) == 2  # the changed settings are cached under their own key


def test_an_edited_added_or_renamed_file_misses(tmp_path, plugin, extractions):
    cache = DataStore(tmp_path / "cache")
    _load(cache, plugin)
    target = plugin / "envs.py"
    target.write_text(target.read_text() + "\nADDED_BY_TEST = 1\n")
    edited = _load(cache, plugin)
    assert "ADDED_BY_TEST" in edited.sources["arctic_inference/envs.py"]
    (plugin / "extra_module.py").write_text("X = 1\n")
    added = _load(cache, plugin)
    assert "arctic_inference/extra_module.py" in added.sources
    (plugin / "extra_module.py").rename(plugin / "renamed_module.py")
    renamed = _load(cache, plugin)
    assert "arctic_inference/renamed_module.py" in renamed.sources
    assert len(extractions) == 4


def test_a_new_rebasekit_version_misses(tmp_path, plugin, extractions, monkeypatch):
    cache = DataStore(tmp_path / "cache")
    _load(cache, plugin)
    monkeypatch.setattr(store, "code_digest", lambda: "another-build")
    _load(cache, plugin)
    assert len(extractions) == 2


def test_a_tampered_entry_is_a_miss_and_is_rebuilt(tmp_path, plugin, extractions):
    cache = DataStore(tmp_path / "cache")
    _load(cache, plugin)
    (entry,) = (tmp_path / "cache").rglob("*.json")
    header, _, payload = entry.read_bytes().partition(b"\n")
    entry.write_bytes(header + b"\n" + payload.replace(b"ArcticPatch", b"EvilPatch0X"))
    rebuilt = _load(cache, plugin)
    assert len(extractions) == 2
    assert rebuilt.to_dict() == extract_corpus(plugin, BASES, "vllm", ENTRY).to_dict()
    _load(cache, plugin)
    assert len(extractions) == 2  # the rebuilt entry was stored again and is read back


def test_a_well_formed_entry_of_another_shape_is_a_miss(tmp_path, plugin, extractions):
    cache = DataStore(tmp_path / "cache")
    _load(cache, plugin)
    (entry,) = (tmp_path / "cache").rglob("*.json")
    key = entry.stem
    cache.save(key, {"files": "not a corpus"})
    assert _load(cache, plugin).patches
    assert len(extractions) == 2


def test_an_unreadable_file_is_never_cached(tmp_path, plugin, extractions):
    cache = DataStore(tmp_path / "cache")
    os.mkfifo(plugin / "fifo.py")
    first = _load(cache, plugin)
    _load(cache, plugin)
    assert len(extractions) == 2
    assert [d.kind for d in first.degradations] == ["file-skipped"]
    assert not list((tmp_path / "cache").rglob("*.json"))
