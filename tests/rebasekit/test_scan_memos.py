"""In-process memos of a scan: the same answers as computing afresh, and no answer carried over to
another corpus, tree or class."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from deep_helpers import NEW, OLD, PLUGIN

from rebasekit.analysis.callsites import unpackings
from rebasekit.analysis.envreads import env_reads
from rebasekit.analysis.overrides import override_drifts
from rebasekit.analysis.selfunpack import self_unpackings, star_unpackings
from rebasekit.astutil import children, own_nodes, walk
from rebasekit.corpus import configured_patch_bases, extract_corpus
from rebasekit.corpus.models import corpus_memo
from rebasekit.index.cache import FactsCache
from rebasekit.index.code_index import CodeIndex
from rebasekit.index.visitor import _instance_attrs
from rebasekit.upstream.spec import open_tree

BUNDLED = Path(__file__).resolve().parents[2] / "arctic_inference"
SOURCE = '''
class A(Base):
    """Doc."""

    def f(self, x, *a, k=1, **kw):
        y = [i for i in x if i]
        def inner():
            return lambda z: z + y
        return inner, {"a": (1, 2)}

    class B:
        g = 3
'''


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"vllm/__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_walk_and_children_keep_the_stdlib_order():
    module = ast.parse(SOURCE)
    assert walk(module) == list(ast.walk(module))
    assert len(walk(module)) > 40
    for node in ast.walk(module):
        assert children(node) == list(ast.iter_child_nodes(node))


def test_own_nodes_stops_at_nested_scopes():
    func = next(n for n in ast.walk(ast.parse(SOURCE)) if isinstance(n, ast.FunctionDef))
    kinds = {type(n) for n in own_nodes(func)}
    assert ast.FunctionDef in kinds and ast.ListComp in kinds  # ``inner`` itself is listed
    assert ast.Lambda not in kinds  # ... but nothing inside it


def test_corpus_memo_is_per_corpus_and_key():
    corpus = extract_corpus(BUNDLED, ("ArcticPatch",), "vllm")
    calls: list[str] = []

    def build(tag: str):
        def run() -> list[str]:
            calls.append(tag)
            return [tag]

        return run

    assert corpus_memo(corpus, ("k",), build("a")) == ["a"]
    assert corpus_memo(corpus, ("k",), build("b")) == ["a"]  # kept
    assert corpus_memo(corpus, ("other",), build("c")) == ["c"]
    narrowed = dataclasses.replace(corpus, patches=[])
    assert corpus_memo(narrowed, ("k",), build("d")) == ["d"]  # a copy starts empty
    assert calls == ["a", "c", "d"]


def test_memoised_corpus_analyses_equal_a_fresh_corpus():
    corpus = extract_corpus(BUNDLED, ("ArcticPatch",), "vllm")
    first = (unpackings(corpus), self_unpackings(corpus), star_unpackings(corpus))
    again = (unpackings(corpus), self_unpackings(corpus), star_unpackings(corpus))
    fresh_corpus = extract_corpus(BUNDLED, ("ArcticPatch",), "vllm")
    fresh = (
        unpackings(fresh_corpus),
        self_unpackings(fresh_corpus),
        star_unpackings(fresh_corpus),
    )
    assert again == first == fresh
    assert any(first)  # the bundled plugin unpacks upstream calls
    assert env_reads(corpus) == env_reads(fresh_corpus)
    assert env_reads(corpus, "other") == ([], set())  # the package is part of the key


def test_repeated_lookups_and_mros_equal_a_fresh_index(tmp_path):
    root = _tree(
        tmp_path,
        {
            "vllm/a.py": "class A:\n    def f(self):\n        pass\n",
            "vllm/b.py": "from vllm.a import A\n\n\nclass B(A):\n    def g(self):\n        pass\n",
            "vllm/c.py": "from vllm.b import B as C\n",
        },
    )
    index = CodeIndex(open_tree(str(root)), FactsCache(None))
    first = index.lookup("vllm.c.C.f")
    assert first.found and first.symbol.qualname == "vllm.a.A.f"
    assert index.lookup("vllm.c.C.f") == first
    fresh = CodeIndex(open_tree(str(root)), FactsCache(None))
    assert fresh.lookup("vllm.c.C.f") == first
    b = index.resolve("vllm.b.B")
    assert [k.qualname for k in index.mro(b)] == ["vllm.b.B", "vllm.a.A"]
    assert index.mro(b) == fresh.mro(fresh.resolve("vllm.b.B"))
    other = dataclasses.replace(b, external_bases=("torch.nn.Module",))
    assert index.mro(other)[0] is other  # the caller's own symbol heads its MRO
    assert index.lookup("vllm.c.C.h").status == fresh.lookup("vllm.c.C.h").status
    assert not index.lookup("vllm.c.C.h").found


def test_override_drifts_are_kept_per_corpus_and_base():
    corpus = extract_corpus(PLUGIN, configured_patch_bases(PLUGIN), "vllm")
    old = CodeIndex(open_tree(str(OLD)), FactsCache(None))
    new = CodeIndex(open_tree(str(NEW)), FactsCache(None))
    first = override_drifts(corpus, old, new)
    assert first  # the fixture has overrides whose upstream body changed
    again = override_drifts(corpus, old, new)
    assert again == first and again is not first  # a copy of the list, the same drifts
    assert all(a is b for a, b in zip(again, first, strict=True))
    other_corpus = extract_corpus(PLUGIN, configured_patch_bases(PLUGIN), "vllm")
    fresh = override_drifts(other_corpus, old, new)
    assert not any(a is b for a, b in zip(fresh, first, strict=True))  # computed again
    assert [(d.patch.name, d.attr, d.diff) for d in fresh] == [
        (d.patch.name, d.attr, d.diff) for d in first
    ]
    assert override_drifts(corpus, new, new) == []  # another base: nothing changed vs itself


ATTRS_SOURCE = """
class K:
    def __init__(self, n):
        self.a = 1
        if n:
            self.b: int = 2
        else:
            self.c += 3
        try:
            self.d, self.e = n
        except ValueError:
            self.f = 4
        finally:
            self.g = 5
        for i in n:
            self.a = 9
        else:
            self.h = 6
        with open(n) as fh:
            self.i = fh
        match n:
            case 1:
                self.j = 7
        def inner(self):
            self.k = 8
        self.lam = lambda: 0
"""


def _walk_attrs(func) -> dict[str, int]:
    """The reference: every node of the function, in ``ast.walk``'s order."""
    me = func.args.args[0].arg
    out: dict[str, int] = {}
    for node in ast.walk(func):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        for target in targets:
            for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    if t.value.id == me:
                        out.setdefault(t.attr, t.lineno)
    return out


def test_instance_attrs_walk_only_statements_in_the_full_walks_order():
    func = next(n for n in ast.walk(ast.parse(ATTRS_SOURCE)) if isinstance(n, ast.FunctionDef))
    found: dict[str, int] = {}
    _instance_attrs(func, found)
    expected = _walk_attrs(func)
    assert list(found.items()) == list(expected.items())
    assert set(found) == set("abcdefghijk") | {"lam"}
    assert found["a"] == 4  # the first store, not the one in the loop
