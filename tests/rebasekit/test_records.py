"""Typed finding records: one per code, identity from declared fields, wording per style."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import rebasekit
from rebasekit.codes import CODES
from rebasekit.records import RECORDS, AttributeGone, ForkDrifted, Style, finding_of

SCHEMA = Path(rebasekit.__file__).parent / "report" / "SCHEMA.md"


def test_every_code_has_exactly_its_own_record_type():
    assert sorted(RECORDS) == sorted(CODES)
    assert all(cls.code == code for code, cls in RECORDS.items())
    assert all(RECORDS[c].identity_fields() for c in RECORDS), "a record without identity"


def test_schema_documents_every_field_of_every_code():
    rows = re.findall(
        r"^\| (RK\d{3}) \| `(\w+)` \| ([^|]*) \| ([^|]*) \|$", SCHEMA.read_text(), re.M
    )
    documented = {
        code: (name, re.findall(r"`(\w+)`", ident), re.findall(r"`(\w+)`", other))
        for code, name, ident, other in rows
    }
    for code, cls in RECORDS.items():
        ident = list(cls.identity_fields())
        other = [f.name for f in dataclasses.fields(cls) if f.name not in ident]
        assert documented.get(code) == (cls.__name__, ident, other), code


def _gone(**changes) -> AttributeGone:
    base = dict(
        target="vllm.Runner",
        attribute="positions",
        patch="RunnerPatch",
        method="__init__",
        cls="vllm.worker.Runner",
        tree="1.1.0",
    )
    return AttributeGone(**{**base, **changes})


def test_identity_ignores_trees_and_wording_but_not_identity_fields():
    at_new, at_old = _gone(), _gone(tree="1.0.0", old_version="0.9", old_value="x")
    assert at_new.identity() == at_old.identity() == ("vllm.Runner", "positions", "__init__")
    assert _gone(attribute="input_ids").identity() != at_new.identity()
    assert _gone(method="prepare").identity() != at_new.identity()  # each reader is its own
    new, old = finding_of(at_new), finding_of(at_old)
    assert new.key() == old.key() and new.message != old.message


def test_plain_styles_share_wording_and_markdown_sets_code_spans():
    record = _gone(old_version="1.0.0")
    text = (
        "RunnerPatch.__init__ reads self.positions, but vllm.worker.Runner (with its bases) "
        "no longer assigns or defines positions at 1.1.0; at 1.0.0 it was defined"
    )
    assert {record.explain(s) for s in (Style.TEXT, Style.JSON, Style.SARIF)} == {text}
    assert record.explain(Style.MARKDOWN) == (
        "`RunnerPatch.__init__` reads `self.positions`, but `vllm.worker.Runner` (with its "
        "bases) no longer assigns or defines `positions` at 1.1.0; at 1.0.0 it was defined"
    )


def test_an_attribute_upstream_never_had_is_not_said_to_be_gone():
    # Neither pin defines it: "no longer" would claim a change that did not happen.
    for record, pins in (
        (_gone(also_missing_at="1.0.0"), "at 1.1.0 or 1.0.0"),
        (_gone(), "at 1.1.0"),
    ):
        text = record.explain(Style.TEXT)
        assert "no longer" not in text and not record.removed
        assert f"does not assign or define positions {pins}: not defined upstream" in text
    assert _gone(old_version="1.0.0").removed


def test_fork_subject_keeps_the_version_two_spelling():
    gone = ForkDrifted("vllm/a.py", "gone", fork="p/a.py", version="1", new_version="2")
    changed = ForkDrifted("vllm/a.py", "changed", ("A", "B.f"), fork="p/a.py", version="1")
    assert (gone.subject, changed.subject) == ("vllm/a.py|gone", "vllm/a.py|A,B.f")
    assert changed.details()["changed"] == ["A", "B.f"]
