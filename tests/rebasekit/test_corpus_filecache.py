"""Per-file extraction records kept on disk: the same corpus as a fresh read, never trusted blindly."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from rebasekit.corpus import extract
from rebasekit.corpus.extract import extract_corpus
from rebasekit.index.cache import DataStore

HERE = Path(__file__).parent
PLUGINS = {
    "deepplug": HERE / "fixtures_deep" / "plugin" / "deepplug",
    "arctic_inference": HERE.parents[1] / "arctic_inference",
}


def _copy(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / "src" / name
    shutil.copytree(PLUGINS[name], dest, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return dest


def _no_extraction(monkeypatch) -> None:
    def boom(*args):
        raise AssertionError("a file was extracted again on a warm cache")

    monkeypatch.setattr(extract, "extract_file", boom)


def test_warm_corpus_equals_a_fresh_read(tmp_path, monkeypatch):
    for name, bases in (("deepplug", ["ArcticPatch"]), ("arctic_inference", ["ArcticPatch"])):
        plugin = _copy(tmp_path, name)
        store = DataStore(tmp_path / f"store-{name}")
        fresh = extract_corpus(plugin, bases)
        cold = extract_corpus(plugin, bases, store=store)
        with monkeypatch.context() as m:
            _no_extraction(m)
            warm = extract_corpus(plugin, bases, store=store)
        assert fresh.patches, name  # the fixture has patches, so the comparison means something
        assert warm.to_dict() == cold.to_dict() == fresh.to_dict()
        assert warm.comments == fresh.comments and warm.sources == fresh.sources
        for f in fresh.files:  # trees parsed on first use match the ones kept at extraction
            tree, lazy = fresh.module(f.relpath), warm.module(f.relpath)
            assert (tree is None) == (lazy is None) == (f.syntax_error is not None)
            if tree is not None and lazy is not None:
                assert ast.dump(tree, include_attributes=True) == ast.dump(
                    lazy, include_attributes=True
                )


def test_edited_file_or_other_bases_miss(tmp_path, monkeypatch):
    plugin = _copy(tmp_path, "deepplug")
    store = DataStore(tmp_path / "store")
    extract_corpus(plugin, ["ArcticPatch"], store=store)
    runner = plugin / "runner.py"
    runner.write_text(runner.read_text() + "\n\nclass Extra(ArcticPatch[Runner]):\n    x = 1\n")
    seen: list[str] = []
    real = extract.extract_file

    def spy(corpus, relpath, source):
        seen.append(relpath)
        real(corpus, relpath, source)

    monkeypatch.setattr(extract, "extract_file", spy)
    edited = extract_corpus(plugin, ["ArcticPatch"], store=store)
    assert seen == ["deepplug/runner.py"]
    assert "Extra" in {p.name for p in edited.patches}
    seen.clear()
    other = extract_corpus(plugin, ["OtherBase"], store=store)
    assert len(seen) == len(other.files) and not other.patches


def test_tampered_entry_is_a_miss(tmp_path, monkeypatch):
    plugin = _copy(tmp_path, "deepplug")
    store = DataStore(tmp_path / "store")
    fresh = extract_corpus(plugin, ["ArcticPatch"], store=store)
    entries = sorted((tmp_path / "store").rglob("*.json"))
    assert len(entries) == len(fresh.files)
    for entry in entries:  # a payload changed after the fact no longer matches its hash
        head, _, payload = entry.read_bytes().partition(b"\n")
        entry.write_bytes(head + b"\n" + payload.replace(b"Patch", b"Ptach"))
    again = extract_corpus(plugin, ["ArcticPatch"], store=store)
    assert again.to_dict() == fresh.to_dict()


def test_syntax_error_file_keeps_no_tree(tmp_path):
    plugin = _copy(tmp_path, "deepplug")
    (plugin / "broken.py").write_text("def f(:\n    pass\n")
    store = DataStore(tmp_path / "store")
    cold = extract_corpus(plugin, ["ArcticPatch"], store=store)
    warm = extract_corpus(plugin, ["ArcticPatch"], store=store)
    (broken,) = [f for f in warm.files if f.relpath.endswith("broken.py")]
    assert broken.syntax_error and broken.error_line == 1
    assert warm.module(broken.relpath) is None
    assert "deepplug/broken.py" not in warm.comments
    assert warm.to_dict() == cold.to_dict()
