"""Name resolution that must terminate: classes deriving from their own name, cycles.

Real upstream trees contain ``class LlamaDecoderLayer(LlamaDecoderLayer)`` (the base is
the imported class of the same name) and import cycles between modules; resolving either
used to recurse until Python gave up.
"""

from __future__ import annotations

from pathlib import Path

from cli_runner import invoke

from rebasekit.cli import app
from rebasekit.index.cache import FactsCache
from rebasekit.index.code_index import CodeIndex
from rebasekit.index.symbols import Status
from rebasekit.upstream.spec import open_tree


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"vllm/__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _index(root: Path) -> CodeIndex:
    return CodeIndex(open_tree(str(root)), FactsCache(None))


SELF_NAMED = {
    "vllm/models/__init__.py": "",
    "vllm/models/llama.py": (
        "class LlamaDecoderLayer:\n    def forward(self, positions, hidden_states):\n        pass\n"
    ),
    "vllm/models/llama_eagle3.py": (
        "from vllm.models.llama import LlamaDecoderLayer\n\n\n"
        "class LlamaDecoderLayer(LlamaDecoderLayer):\n"
        "    def extra(self):\n        pass\n"
    ),
}


def test_class_deriving_from_its_own_imported_name(tmp_path):
    index = _index(_tree(tmp_path, SELF_NAMED))
    cls = index.resolve("vllm.models.llama_eagle3.LlamaDecoderLayer")
    assert cls is not None and cls.relpath == "vllm/models/llama_eagle3.py"
    assert cls.bases == ("vllm.models.llama.LlamaDecoderLayer",)
    forward = index.lookup_member(cls, "forward")
    assert forward is not None and forward.relpath == "vllm/models/llama.py"
    assert [k.relpath for k in index.mro(cls)] == [
        "vllm/models/llama_eagle3.py",
        "vllm/models/llama.py",
    ]


def test_self_named_base_without_an_earlier_binding_is_unknown_not_itself(tmp_path):
    index = _index(_tree(tmp_path, {"vllm/odd.py": "class X(X):\n    pass\n"}))
    cls = index.resolve("vllm.odd.X")
    assert cls is not None
    assert cls.bases == () and cls.external_bases == ("X",)
    # unknown base: a missing member may come from it, so it is dynamic, not missing
    assert index.lookup("vllm.odd.X.anything").status is Status.DYNAMIC


def test_cyclic_reexports_terminate_unresolved(tmp_path):
    index = _index(
        _tree(
            tmp_path, {"vllm/a.py": "from vllm.b import X\n", "vllm/b.py": "from vllm.a import X\n"}
        )
    )
    assert not index.lookup("vllm.a.X").found


def test_cyclic_class_bases_terminate(tmp_path):
    index = _index(
        _tree(
            tmp_path,
            {
                "vllm/a.py": "from vllm.b import B\n\n\nclass A(B):\n    def f(self):\n        pass\n",
                "vllm/b.py": "from vllm.a import A\n\n\nclass B(A):\n    def g(self):\n        pass\n",
            },
        )
    )
    a = index.resolve("vllm.a.A")
    assert a is not None and a.bases == ("vllm.b.B",)
    assert index.lookup_member(a, "g") is not None
    assert index.lookup_member(a, "f") is not None
    assert index.lookup_member(a, "nothing") is None


def test_scan_of_a_patch_on_a_self_named_class_exits_normally(tmp_path):
    upstream = _tree(tmp_path / "up", SELF_NAMED)
    plugin = tmp_path / "plug" / "eagleplug"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text("")
    (plugin / "patches.py").write_text(
        "from vllm.models.llama_eagle3 import LlamaDecoderLayer\n\n\n"
        "class ArcticPatch:\n    def __class_getitem__(cls, item):\n        return cls\n\n\n"
        "class LayerPatch(ArcticPatch[LlamaDecoderLayer]):\n"
        "    _orig_forward = LlamaDecoderLayer.forward\n\n"
        "    def forward(self, positions, hidden_states):\n"
        "        return self._orig_forward(positions, hidden_states)\n"
    )
    res = invoke(
        app,
        ["scan", "--vllm", upstream, "--plugin", plugin, "--patch-base", "ArcticPatch"],
    )
    assert res.exit_code in (0, 1), res.output
    assert "RecursionError" not in res.output
