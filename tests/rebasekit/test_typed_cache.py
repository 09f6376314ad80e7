"""Typed cache entries and caches by content: read back equal, missed when stale, never trusted
when damaged."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from rebasekit.analysis import forkstate
from rebasekit.analysis.forkdecl import ForkDecl, detect_fork, file_fingerprints, fork_drift
from rebasekit.analysis.forkstate import cached_fingerprints
from rebasekit.index import CodeIndex, FactsCache
from rebasekit.index.cache import DataStore, content_memo, facts_key
from rebasekit.index.models import DefFact, ModuleFacts, Param, ParamKind, Signature
from rebasekit.upstream import open_tree

FIX = Path(__file__).parent / "fixtures"
NEW = FIX / "upstream_new"
RELPATH = "vllm/engine/core.py"
KEY = "ab" * 32

FACTS = ModuleFacts(
    "pkg.mod",
    "pkg/mod.py",
    False,
    defs={
        "Engine": DefFact(
            "Engine",
            "class",
            3,
            9,
            bases=("Base",),
            members={
                "step": DefFact(
                    "step",
                    "function",
                    4,
                    9,
                    Signature(
                        (
                            Param("self", ParamKind.POSITIONAL_OR_KEYWORD),
                            Param("rest", ParamKind.VAR_KEYWORD, annotation="Any"),
                        ),
                        returns="int",
                    ),
                )
            },
            instance_attrs={"x": 5},
        )
    },
    all_names=["Engine"],
)


def _header(path: Path) -> dict:
    return json.loads(path.read_bytes().partition(b"\n")[0])


def _rewrite(path: Path, header: dict, payload: bytes) -> None:
    """An entry whose header hash matches ``payload`` (what a careful forger would write)."""
    header = {**header, "sha256": hashlib.sha256(payload).hexdigest()}
    path.write_bytes(json.dumps(header).encode() + b"\n" + payload)


def test_typed_entry_reads_back_equal_records(tmp_path):
    store = DataStore(tmp_path)
    store.save(KEY, FACTS, kind=ModuleFacts)
    assert _header(store.path(KEY))["codec"] == "typed"
    back = store.load(KEY, kind=ModuleFacts)
    assert back == FACTS and back is not FACTS
    step = back.defs["Engine"].members["step"]
    assert isinstance(step.signature.params, tuple)
    assert step.signature.params[1].kind is ParamKind.VAR_KEYWORD


def test_typed_entry_with_a_wrong_field_type_is_a_miss(tmp_path):
    store = DataStore(tmp_path)
    store.save(KEY, FACTS, kind=ModuleFacts)
    path = store.path(KEY)
    header, _, payload = path.read_bytes().partition(b"\n")
    forged = payload.replace(b'"lineno":3', b'"lineno":"3"', 1)
    assert forged != payload
    _rewrite(path, json.loads(header), forged)
    assert store.load(KEY, "miss", kind=ModuleFacts) == "miss"


def test_typed_entry_of_another_layout_is_a_miss(tmp_path):
    store = DataStore(tmp_path)
    store.save(KEY, FACTS, kind=ModuleFacts)
    path = store.path(KEY)
    header, _, payload = path.read_bytes().partition(b"\n")
    _rewrite(path, {**json.loads(header), "layout": "0" * 16}, payload)
    assert store.load(KEY, "miss", kind=ModuleFacts) == "miss"


def test_typed_entry_is_not_read_without_its_type(tmp_path):
    store = DataStore(tmp_path)
    store.save(KEY, FACTS, kind=ModuleFacts)
    assert store.load(KEY, "miss") == "miss"


@dataclass(frozen=True)
class _Pair:
    left: tuple[str, ...]


def test_a_value_that_does_not_fit_its_type_is_stored_tagged(tmp_path):
    store = DataStore(tmp_path)
    value = {"a": ["x", "y"]}  # a list where the declared type says tuple
    store.save(KEY, value, kind=dict[str, tuple[str, ...]])
    assert _header(store.path(KEY))["codec"] == "tagged"
    back = store.load(KEY, kind=dict[str, tuple[str, ...]])
    assert back == value and isinstance(back["a"], list)


def test_cached_facts_are_typed_and_a_forged_entry_is_rebuilt(tmp_path):
    index = CodeIndex(open_tree(str(NEW)), FactsCache(tmp_path))
    cold = index.module("vllm.engine.core")
    assert cold is not None and index.parsed == 1
    path = index.cache._store.path(facts_key(RELPATH, (NEW / RELPATH).read_bytes()))
    assert _header(path)["codec"] == "typed"
    warm_index = CodeIndex(open_tree(str(NEW)), FactsCache(tmp_path))
    assert warm_index.module("vllm.engine.core") == cold and warm_index.parsed == 0
    header, _, payload = path.read_bytes().partition(b"\n")
    _rewrite(path, json.loads(header), payload.replace(b'"is_package":false', b'"is_package":0'))
    again = CodeIndex(open_tree(str(NEW)), FactsCache(tmp_path))
    assert again.module("vllm.engine.core") == cold and again.parsed == 1


def test_content_memo_hits_on_the_same_parts_and_misses_on_others(tmp_path):
    store = DataStore(tmp_path)
    calls: list[str] = []

    def compute(text: str):
        def run() -> tuple[str, ...]:
            calls.append(text)
            return (text.upper(),)

        return run

    assert content_memo(store, "up", ("ab",), compute("ab"), tuple[str, ...]) == ("AB",)
    assert content_memo(store, "up", ("ab",), compute("ab"), tuple[str, ...]) == ("AB",)
    assert calls == ["ab"]
    assert content_memo(store, "up", ("ac",), compute("ac"), tuple[str, ...]) == ("AC",)
    assert content_memo(store, "other", ("ab",), compute("ab"), tuple[str, ...]) == ("AB",)
    assert calls == ["ab", "ac", "ab"]
    for entry in tmp_path.rglob("*.json"):
        entry.write_bytes(b"\x80\x05garbage")
    assert content_memo(store, "up", ("ab",), compute("ab"), tuple[str, ...]) == ("AB",)
    assert calls == ["ab", "ac", "ab", "ab"]


OLD_TEXT = '''
class A:
    def f(self):
        """Doc."""
        return 1

    def g(self):
        return 2


def h():
    return 3
'''
NEW_TEXT = '''
class A:
    def f(self):
        """Other doc."""
        return 1

    def g(self):
        return 20


def h():
    return 3
'''


def test_cached_fingerprints_equal_the_computed_ones_and_follow_the_text(tmp_path):
    store = DataStore(tmp_path)
    computed = file_fingerprints(OLD_TEXT)
    assert set(computed) == {"A", "A.f", "A.g", "h"}
    assert cached_fingerprints(store, OLD_TEXT) == computed
    assert cached_fingerprints(store, OLD_TEXT) == computed  # read back
    changed = cached_fingerprints(store, NEW_TEXT)
    assert changed["A.g"] != computed["A.g"]
    assert changed["A.f"] == computed["A.f"]  # a docstring is not drift


def test_fork_drift_is_the_same_with_cached_fingerprints(tmp_path):
    store = DataStore(tmp_path)
    decl = ForkDecl("plug/a.py", "vllm/a.py", "1.0", "header")
    plain = fork_drift(decl, OLD_TEXT, OLD_TEXT, NEW_TEXT)
    cached = fork_drift(
        decl, OLD_TEXT, OLD_TEXT, NEW_TEXT, fingerprints=lambda t: cached_fingerprints(store, t)
    )
    assert [(c.qualname, c.status, c.forked) for c in plain.changes] == [("A.g", "changed", True)]
    assert [(c.qualname, c.status, c.forked) for c in cached.changes] == [("A.g", "changed", True)]
    assert cached.module_level_changed == plain.module_level_changed


PLUGIN_COPY = """
class A:
    def f(self):
        return 1

    def g(self):
        return 2


def h():
    return 3
"""


def test_cached_fork_detection_equals_the_detection_and_follows_every_text(tmp_path, monkeypatch):
    store = DataStore(tmp_path)
    cands = {"vllm/a.py": OLD_TEXT, "vllm/b.py": "x = 1\n"}
    plain = detect_fork("plug/a.py", PLUGIN_COPY, cands)
    assert plain is not None and plain.upstream_path == "vllm/a.py"
    first = forkstate._cached_detect(store, "plug/a.py", PLUGIN_COPY, cands, lambda: None)
    assert first == plain
    calls: list[str] = []

    def counted(relpath, text, candidates, tree=None):
        calls.append(relpath)
        return detect_fork(relpath, text, candidates, tree)

    monkeypatch.setattr(forkstate, "detect_fork", counted)
    assert forkstate._cached_detect(store, "plug/a.py", PLUGIN_COPY, cands, lambda: None) == plain
    assert calls == []  # read back
    edited = {**cands, "vllm/a.py": OLD_TEXT.replace("return 3", "return 4")}
    forkstate._cached_detect(store, "plug/a.py", PLUGIN_COPY, edited, lambda: None)
    forkstate._cached_detect(store, "plug/a.py", PLUGIN_COPY + "\n# more\n", cands, lambda: None)
    assert calls == ["plug/a.py", "plug/a.py"]  # an edited candidate or plugin file misses
