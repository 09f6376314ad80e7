"""Tree-derived results cached on disk: reused while the tree is unchanged, redone after an edit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rebasekit.analysis import parallel
from rebasekit.index import CodeIndex, FactsCache
from rebasekit.index.cache import DataStore, tree_memo
from rebasekit.upstream import open_tree

DEEP_NEW = Path(__file__).parent / "fixtures_deep" / "upstream_new"


def _index(root: Path, cache: Path) -> CodeIndex:
    return CodeIndex(open_tree(str(root)), FactsCache(cache))


def test_twins_cached_per_tree_fingerprint(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    shutil.copytree(DEEP_NEW, tree)
    cold = parallel.find_twins(_index(tree, tmp_path / "c"), "vllm.worker.runner.Runner")
    assert [t.qualname for t in cold] == ["vllm.worker.v2.runner.Runner"] and cold[0].selectors

    def boom(*args):
        raise AssertionError("selectors recomputed on a warm cache")

    monkeypatch.setattr(parallel, "find_selectors", boom)
    warm = parallel.find_twins(_index(tree, tmp_path / "c"), "vllm.worker.runner.Runner")
    assert warm == cold
    with pytest.raises(AssertionError, match="recomputed"):  # no disk cache: computed afresh
        parallel.find_twins(
            CodeIndex(open_tree(str(tree)), FactsCache(None)), "vllm.worker.runner.Runner"
        )
    twin = tree / "vllm" / "worker" / "v2" / "runner.py"
    twin.write_text(twin.read_text() + "\n# edited\n")
    with pytest.raises(AssertionError, match="recomputed"):  # the edit changed the fingerprint
        parallel.find_twins(_index(tree, tmp_path / "c"), "vllm.worker.runner.Runner")


def test_folder_fingerprint_is_stable():
    tree = open_tree(str(DEEP_NEW))
    assert tree.fingerprint == open_tree(str(DEEP_NEW)).fingerprint
    assert tree.fingerprint.startswith("stat-")


def test_unreadable_store_entry_is_a_miss(tmp_path):
    store = DataStore(tmp_path)
    store.save("ab" * 32, {"x": 1})
    assert store.load("ab" * 32) == {"x": 1}
    store.path("ab" * 32).write_bytes(b"\x80\x05garbage")
    assert store.load("ab" * 32, "miss") == "miss"
    calls = []

    @tree_memo
    def count(index, arg):
        calls.append(arg)
        return arg * 2

    index = _index(DEEP_NEW, tmp_path / "m")
    assert count(index, 3) == count(index, 3) == 6 and calls == [3]
