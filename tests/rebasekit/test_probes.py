"""Probe kinds evaluated on real files, probe-file validation, and the shipped probe file."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebasekit.errors import InputError
from rebasekit.history.probes import evaluate, load_probes, parse_probes

ROOT = Path(__file__).resolve().parents[2]

CODE_A = """
import os
LAYOUT = (2, "n", "b")
class Runner:
    def execute_model(self, scheduler_output, intermediate_tensors=None) -> "Output":
        def helper():
            return "nested"
        if scheduler_output:
            return self._run(scheduler_output)
        return None
def main():
    os.environ.setdefault("X", "1")
"""
CODE_B = """
import os
LAYOUT = (2,
          "n", "b")
class Runner:
    def execute_model(
        self,
        scheduler_output,
        intermediate_tensors = None,
    ) -> "Output":
        if scheduler_output:
            return self._run( scheduler_output )
        return None
"""


def probe(**table):
    return parse_probes(
        "[[probe]]\n"
        + "\n".join(
            f"{k} = {v!r}".replace("'", '"') if isinstance(v, str) else f"{k} = {str(v).lower()}"
            for k, v in table.items()
        ),
        "toml",
        "t",
    )[0]


def value(p, text, pin=None):
    return evaluate(p, {"m.py": text, "pyproject.toml": text}.get, pin)


@pytest.mark.parametrize(
    "kind, target, expected",
    [
        (
            "signature",
            "Runner.execute_model",
            "execute_model(self, scheduler_output, intermediate_tensors=None) -> 'Output'",
        ),
        ("returns", "Runner.execute_model", "self._run(scheduler_output) | None"),
        ("constant", "LAYOUT", "(2, 'n', 'b')"),
    ],
)
def test_structural_probes_survive_reformatting(kind, target, expected):
    p = probe(label="x", file="m.py", **{kind: target})
    assert value(p, CODE_A).value == expected
    assert value(p, CODE_B).value == expected


def test_calls_and_missing_values():
    calls = probe(label="x", file="m.py", calls="setdefault")
    assert value(calls, CODE_A).value == "yes" and value(calls, CODE_B).value == "no"
    sig = probe(label="x", file="m.py", signature="Runner.nope")
    assert (value(sig, CODE_A).value, value(sig, CODE_A).why) == (None, "not defined")
    assert evaluate(sig, {}.get, None).why == "no file"
    assert value(sig, "def (:").why == "unparsable"
    nested = probe(label="x", file="m.py", signature="Runner.execute_model.helper")
    assert value(nested, CODE_A).value is None  # functions end the walk


def test_regex_group_dotall_all():
    text = "A = 1\nB = 2\nblock(\n  x\n)\n"
    assert value(probe(label="x", file="m.py", regex=r"^(\w) = (\d)"), text).value == "A"
    assert (
        value(probe(label="x", file="m.py", regex=r"^(\w) = (\d)", group=2, all=True), text).value
        == "1, 2"
    )
    assert value(probe(label="x", file="m.py", regex=r"block\((.*)\)"), text).why == "no match"
    assert (
        value(probe(label="x", file="m.py", regex=r"block\((.*)\)", dotall=True), text).value == "x"
    )


def test_requirement_probe_reads_any_extra_or_one():
    text = (
        '[project]\ndependencies = ["protobuf>=5"]\n[project.optional-dependencies]\n'
        'vllm = ["vllm==0.26.0", "torch==2.11.0"]\nold = ["torch==2.9"]\n'
    )
    assert (
        value(probe(label="x", file="pyproject.toml", requirement="torch"), text).value
        == "==2.11.0"
    )
    assert (
        value(probe(label="x", file="pyproject.toml", requirement="torch", extra="old"), text).value
        == "==2.9"
    )
    assert (
        value(probe(label="x", file="pyproject.toml", requirement="protobuf", extra=""), text).value
        == ">=5"
    )
    assert (
        value(probe(label="x", file="pyproject.toml", requirement="numpy"), text).why
        == "not required"
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[probe]]\nfile = "a"\nregex = "x"', "non-empty 'label'"),
        ('[[probe]]\nlabel = "a"\nfile = "a"\nregex = "x"\ncalls = "f"', "exactly one"),
        ('[[probe]]\nlabel = "a"\nregex = "x"', "need a 'file'"),
        ('[[probe]]\nlabel = "a"\nfile = "a"\nregex = "(x)"\ngroup = 2', "1 group"),
        ('[[probe]]\nlabel = "a"\nfile = "a"\nregex = "x"\ncolour = 1', "unknown probe key"),
        ('[[probe]]\nlabel = "a"\npin = true\n[[probe]]\nlabel = "a"\npin = true', "two probes"),
        ("probe = 3", "defines no probes"),
        ("[[probe", "not valid TOML"),
    ],
)
def test_bad_probe_files(text, message):
    with pytest.raises(InputError, match=message):
        parse_probes(text, "toml", "p.toml")


def test_json_probe_file(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(
        '[{"label": "pin", "pin": true}, {"label": "c", "file": "m.py", "constant": "X"}]'
    )
    assert [p.kind for p in load_probes(path)] == ["pin", "constant"]


def test_shipped_probes_read_the_real_plugin():
    probes = {p.label: p for p in load_probes(ROOT / "probes" / "evolution_probes.toml")}

    def read(rel):
        path = ROOT / rel
        return path.read_text() if path.is_file() else None

    from arctic_inference.vllm import plugin

    const = evaluate(probes["vLLM pin constant (plugin.py)"], read, None)
    assert const.value == repr(plugin.VLLM_PATCH_VERSION)
    forced = evaluate(probes["V2 runner forced to"], read, None)
    assert forced.value is not None and forced.value in ("0", "1")
    shape = evaluate(probes["KV-cache shape of the forked FlashAttention backend"], read, None)
    assert shape.value == "(num_blocks, num_kv_heads, block_size, 2 * head_size)"  # vLLM 0.26.0's


def test_every_shipped_probe_reads_real_plugin_code():
    """No shipped probe may point at a file or definition the checkout does not have."""
    probes = load_probes(ROOT / "probes" / "evolution_probes.toml")

    def read(rel):
        path = ROOT / rel
        return path.read_text() if path.is_file() else None

    code_probes = [p for p in probes if p.kind in ("signature", "returns", "constant")]
    assert code_probes
    empty = {
        p.label: evaluate(p, read, "0.0.0").why
        for p in code_probes
        if evaluate(p, read, "0.0.0").value is None
    }
    assert empty == {}


def test_signature_probes_cover_the_patched_methods():
    """Every method a patch class overrides (dunders aside) has a signature probe."""
    from rebasekit.scan import load_corpus

    probes = [
        p for p in load_probes(ROOT / "probes" / "evolution_probes.toml") if p.kind == "signature"
    ]
    probed = {(p.file, p.target) for p in probes}
    corpus = load_corpus(ROOT / "arctic_inference")
    wanted = {
        (patch.relpath, f"{patch.name}.{attr.name}")
        for patch in corpus.patches
        for attr in patch.attributes
        if attr.kind in ("method", "staticmethod", "classmethod") and not attr.name.startswith("__")
    }
    assert wanted and sorted(wanted - probed) == []
