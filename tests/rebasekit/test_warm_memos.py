"""What a warm scan reads back instead of parsing: the same answers as computing afresh, a
miss as soon as a text it depends on changes, and no syntax tree for plugin files that no
analysis needs."""

from __future__ import annotations

import ast
import hashlib
import textwrap
from pathlib import Path

import pytest
from deep_helpers import NEW, OLD, PLUGIN
from hypothesis import given, settings
from hypothesis import strategies as st
from synth_helpers import upstream

from rebasekit.analysis import duties, envreads, forkstate, overrides, wrapped
from rebasekit.analysis.captures import captures
from rebasekit.analysis.envreads import defined_names, env_reads
from rebasekit.analysis.pluginclasses import import_map, plugin_classes, replaced_names
from rebasekit.corpus import configured_patch_bases, extract_corpus
from rebasekit.corpus.models import PluginCorpus
from rebasekit.dedent import dedent
from rebasekit.index import CodeIndex, FactsCache
from rebasekit.index import cache as cache_module
from rebasekit.index.cache import DataStore
from rebasekit.upstream import open_tree

BUNDLED = Path(__file__).resolve().parents[2] / "arctic_inference"


def _index(root: Path, cache: Path) -> CodeIndex:
    return CodeIndex(open_tree(str(root)), FactsCache(cache))


def _counting(monkeypatch, module, name: str) -> list[int]:
    """Replace ``module.name`` by a wrapper that counts its calls; the list of calls."""
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


# -- dedent -------------------------------------------------------------------------------

EDGE_CASES = [
    "",
    "\n",
    "  \n",
    "x",
    "  x\n    y\n",
    "\tx\n\ty\n",
    "  x\n\ty\n",  # no common margin: spaces against a tab
    " \t x\n \t y\n  z\n",
    "    a\n\n    b\n",
    "    a\n  \n    b\n",  # a blank line of spaces only is emptied
    "    a\n      \t\n    b",
    "  a\r\n  b\r\n",  # \r is text, not a line end
    "  \x0cx\n  y\n",  # a form feed is text too
    "    def f():\n        return 1\n",
    "  x\n   y\n z\n",
    "x\n  y\n",
]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_dedent_is_textwrap_dedent_on_edge_cases(text):
    assert dedent(text) == textwrap.dedent(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([" ", "  ", "\t", "\n", "a", "b", "\r", "\x0c", "#"])))
def test_dedent_is_textwrap_dedent_on_any_text(parts):
    text = "".join(parts)
    assert dedent(text) == textwrap.dedent(text)


def test_dedent_is_textwrap_dedent_on_every_definition_of_real_sources():
    texts = [p.read_text() for p in sorted(BUNDLED.rglob("*.py"))]
    snippets = []
    for text in texts:
        lines = text.splitlines(keepends=True)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                snippets.append("".join(lines[node.lineno - 1 : node.end_lineno]))
    assert len(snippets) > 500
    assert sum(1 for s in snippets if s.startswith(" ")) > 100  # methods: a margin to remove
    assert [dedent(s) for s in snippets] == [textwrap.dedent(s) for s in snippets]


# -- override comparisons -----------------------------------------------------------------


def test_override_drifts_read_back_from_the_cache_equal_the_computed_ones(tmp_path, monkeypatch):
    bases = configured_patch_bases(PLUGIN)
    cache = tmp_path / "cache"
    first = overrides.override_drifts(
        extract_corpus(PLUGIN, bases, "vllm"), _index(OLD, cache), _index(NEW, cache)
    )
    assert first  # the fixture has overrides whose upstream body changed
    calls = _counting(monkeypatch, overrides, "_comparison")
    again = overrides.override_drifts(
        extract_corpus(PLUGIN, bases, "vllm"), _index(OLD, cache), _index(NEW, cache)
    )
    assert calls == []  # every comparison read back
    assert [(d.patch.name, d.attr, d.similarity, d.diff, d.changed) for d in again] == [
        (d.patch.name, d.attr, d.similarity, d.diff, d.changed) for d in first
    ]
    for drift in again:  # the definitions are still there, parsed on first use
        expected = overrides.symbol_definition(drift.new_sym)
        assert expected is not None and drift.new_def.source == expected.source
        assert ast.dump(drift.old_def.node) == ast.dump(
            overrides.symbol_definition(drift.old_sym).node
        )


def test_an_override_comparison_misses_when_an_original_changes(tmp_path, monkeypatch):
    store = DataStore(tmp_path)
    ours = ("return x + 1",)
    old = ("f", "def f(self, x):\n    return x + 1\n", "a.py@1")
    new = ("f", "def f(self, x):\n    return x + 2\n", "a.py@2")
    calls = _counting(monkeypatch, overrides, "_comparison")
    first = overrides._cached_comparison(store, ours, old, new)
    assert first is not None and "+    return x + 2" in first[1]
    assert overrides._cached_comparison(store, ours, old, new) == first
    assert len(calls) == 1  # read back
    edited = ("f", "def f(self, x):\n    return x + 3\n", "a.py@2")
    second = overrides._cached_comparison(store, ours, old, edited)
    assert len(calls) == 2 and second is not None
    assert "+    return x + 3" in second[1] and "+    return x + 2" not in second[1]
    broken = ("f", "def f(self, x:\n", "a.py@2")
    assert overrides._cached_comparison(store, ours, old, broken) is None  # no drift to report


# -- duties of a replaced method ----------------------------------------------------------

ENGINE = """\
class Base:
    def report(self):
        return self.{read}


class Engine(Base):
    def load(self):
        self.ready = True
{assign}
    def step(self):
        return self.ready
"""


def _engine(root: Path, version: str, assign: str, read: str = "cache") -> Path:
    text = ENGINE.format(assign=assign, read=read)
    return upstream(root, version, {"engine.py": text})


def test_new_duties_are_read_back_and_follow_every_class_of_the_mro(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    old_root = _engine(tmp_path / "old", "1.0.0", "")
    new_root = _engine(tmp_path / "new", "1.1.0", "        self.cache = {}\n")

    def ask(new_root: Path) -> list[duties.NewDuty]:
        old, new = _index(old_root, cache), _index(new_root, cache)
        cls = new.resolve("vllm.engine.Engine")
        old_sym, new_sym = (
            old.resolve("vllm.engine.Engine.load"),
            new.resolve("vllm.engine.Engine.load"),
        )
        assert cls is not None and old_sym is not None and new_sym is not None
        return duties.cached_new_duties(new, cls, "load", old_sym, new_sym)

    calls = _counting(monkeypatch, duties, "new_duties")
    first = ask(new_root)
    assert [(d.attr, d.reader) for d in first] == [("cache", "Base.report")]
    assert ask(new_root) == first and len(calls) == 1  # read back
    # the base class no longer reads the attribute: its text is part of the key
    edited = _engine(tmp_path / "edited", "1.1.0", "        self.cache = {}\n", read="other")
    assert ask(edited) == [] and len(calls) == 2


# -- the method that unwraps a wrapped attribute ------------------------------------------

WRAPPING = """\
class Wrapper:
    def __init__(self, inner):
        self.inner = inner


class Engine:
    def load(self):
        self.net = Wrapper(self.net)

    def {name}(self):
        if isinstance(self.net, Wrapper):
            return self.net.inner
        return self.net
"""


def test_the_unwrapping_method_is_read_back_and_follows_the_class_text(tmp_path, monkeypatch):
    cache = tmp_path / "cache"

    def ask(name: str, folder: str):
        index = _index(
            upstream(tmp_path / folder, "1.0.0", {"e.py": WRAPPING.format(name=name)}), cache
        )
        cls = index.resolve("vllm.e.Engine")
        assert cls is not None
        found = wrapped.unwrapper(index, cls, "net", "Wrapper")
        return found.qualname if found is not None else None

    calls = _counting(monkeypatch, wrapped, "_unwrapping_method")
    assert ask("get_net", "a") == "vllm.e.Engine.get_net"
    assert ask("get_net", "b") == "vllm.e.Engine.get_net" and len(calls) == 1  # read back
    assert ask("fetch_net", "c") == "vllm.e.Engine.fetch_net" and len(calls) == 2


# -- names an envs module defines ---------------------------------------------------------


def test_envs_names_are_read_back_and_follow_the_module_text(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    calls = _counting(monkeypatch, envreads, "_defined_in")
    envs = 'environment_variables = {"VLLM_A": 1}\nVLLM_B = 2\n'
    first = _index(upstream(tmp_path / "a", "1.0.0", {"envs.py": envs}), cache)
    assert defined_names(first) == {"environment_variables", "VLLM_A", "VLLM_B"}
    again = _index(upstream(tmp_path / "b", "1.0.0", {"envs.py": envs}), cache)
    assert defined_names(again) == {"environment_variables", "VLLM_A", "VLLM_B"}
    assert len(calls) == 1  # read back
    edited = _index(upstream(tmp_path / "c", "1.0.0", {"envs.py": envs.replace("A", "C")}), cache)
    assert defined_names(edited) == {"environment_variables", "VLLM_C", "VLLM_B"}
    assert len(calls) == 2
    broken = _index(upstream(tmp_path / "d", "1.0.0", {"envs.py": "def f(:\n"}), cache)
    assert defined_names(broken) is None


# -- top-level names of a plugin file (fork detection) ------------------------------------


def test_top_level_names_are_read_back_without_a_tree_and_follow_the_text(tmp_path):
    store = DataStore(tmp_path)
    trees: list[str] = []

    def tree_of(text: str):
        def parse():
            trees.append(text)
            return ast.parse(text)

        return parse

    text = "def f():\n    pass\n\nclass C:\n    def m(self):\n        pass\n\ndef f():\n    pass\n"
    assert forkstate._top_level_names(store, text, tree_of(text)) == ["f", "C"]
    assert forkstate._top_level_names(store, text, tree_of(text)) == ["f", "C"]
    assert len(trees) == 1  # the second answer needed no tree
    edited = text.replace("class C", "class D")
    assert forkstate._top_level_names(store, edited, tree_of(edited)) == ["f", "D"]
    assert len(trees) == 2
    broken = "def f(:\n"
    assert forkstate._top_level_names(store, broken, lambda: None) is None


# -- plugin files no analysis needs a tree of ---------------------------------------------


def _treeless(corpus: PluginCorpus) -> PluginCorpus:
    """The corpus as the corpus cache gives it back: no syntax tree built yet."""
    return PluginCorpus.from_data(corpus.to_data())


def test_files_without_upstream_imports_or_patches_are_not_parsed_and_change_nothing():
    full = extract_corpus(BUNDLED, ("ArcticPatch",), "vllm")
    lean = _treeless(full)
    assert lean.modules == {}
    plain = [
        r
        for r in lean.parsed_relpaths()
        if not import_map(lean, r) and all(p.relpath != r for p in lean.patches)
    ]
    assert plain  # the bundled plugin has helper modules that import nothing from vllm
    assert env_reads(lean) == env_reads(full)
    assert captures(lean, "0.26.0") == captures(full, "0.26.0")
    assert replaced_names(lean) == replaced_names(full)
    assert [(c.name, c.relpath, c.upstream, c.own_names) for c in plugin_classes(lean)] == [
        (c.name, c.relpath, c.upstream, c.own_names) for c in plugin_classes(full)
    ]
    assert not set(plain) & set(lean.modules)  # none of their trees was built


# -- keys of caches by content ------------------------------------------------------------


def _key(value) -> str:
    digest = hashlib.sha256()
    cache_module._feed(digest, value)
    return digest.hexdigest()


def test_content_keys_tell_apart_values_that_read_alike():
    values = [
        ("ab", "c"),
        ("a", "bc"),
        ("abc",),
        (1,),
        ("1",),
        [1],
        (True,),
        (1.0,),
        (None,),
        ("None",),
        (("a",),),
        ("a",),
        ((), ""),
        ("", ()),
        ("é",),
        ("e\u0301",),
    ]
    assert len({_key(v) for v in values}) == len(values)


scalars = st.one_of(st.text(max_size=4), st.integers(-3, 3), st.booleans(), st.none())
nested = st.recursive(scalars, lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=3))


@settings(max_examples=300, deadline=None)
@given(nested, nested)
def test_content_keys_differ_whenever_the_values_differ(a, b):
    same = type(a) is type(b) and repr(a) == repr(b)
    assert (_key(a) == _key(b)) == same
