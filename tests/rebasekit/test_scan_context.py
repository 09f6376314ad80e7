"""The scan context: read once at the edge, frozen, and the only thing checks look at."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from deep_helpers import NEW, OLD, PLUGIN

import rebasekit.load
import rebasekit.upstream
import rebasekit.upstream.spec
from rebasekit.load import NEEDS_BASE, NEEDS_FORKS, scan_context
from rebasekit.scan import load_corpus, run_scan, scan_plugin


def _refuse_to_open(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"a tree was opened after the context was made: {args}")

    monkeypatch.setattr(rebasekit.upstream.spec, "open_tree", refuse)
    monkeypatch.setattr(rebasekit.upstream, "open_tree", refuse)
    monkeypatch.setattr(rebasekit.load, "open_tree", refuse)


def test_checks_open_no_tree_of_their_own(tmp_path, monkeypatch):
    """A fork recorded at a release nobody opened: the loader says why, the check reports it."""
    plugin = tmp_path / "plugin"
    shutil.copytree(PLUGIN.parent, plugin)
    pyproject = plugin / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("text.py@1.0.0", "text.py@0.0.0-nowhere"))
    corpus = load_corpus(plugin / "deepplug")
    ctx = scan_context(corpus, str(NEW), str(OLD))
    assert isinstance(ctx.forks.trees["0.0.0-nowhere"], str)  # the reason, not a tree
    _refuse_to_open(monkeypatch)
    found = run_scan(ctx, select=["RK403"]).findings
    unreadable = [f for f in found if f.details["subject"].endswith("|base")]
    assert [f.plugin.path for f in unreadable] == ["deepplug/text_fork.py"]


def test_context_is_frozen_and_old_side_has_no_base():
    ctx = scan_context(load_corpus(PLUGIN), str(NEW), str(OLD))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.base = None  # type: ignore[misc]
    assert ctx.base is ctx.old
    at_old = ctx.at_old()
    assert (at_old.new, at_old.old, at_old.base) == (ctx.old, None, None)
    assert [(o.role, o.reason) for o in ctx.origins] == [("new", "given"), ("old", "given")]


def test_without_old_the_base_is_the_lock_pin_only_when_a_check_needs_it(tmp_path):
    plugin = tmp_path / "plugin"
    shutil.copytree(PLUGIN.parent, plugin)
    (plugin / "rebasekit.lock.json").write_text("{")  # unreadable: a degradation, if read
    corpus = load_corpus(plugin / "deepplug")
    narrow = scan_context(corpus, str(NEW), needs=())
    assert (narrow.base, narrow.degradations, narrow.forks.decls) == (None, (), ())
    full = scan_context(corpus, str(NEW), needs=(NEEDS_BASE, NEEDS_FORKS))
    assert full.base is None
    assert [d.kind for d in full.degradations] == ["lock-unusable"]
    assert {d.plugin_relpath for d in full.forks.decls} == {
        "deepplug/text_fork.py",
        "deepplug/mathx_fork.py",
    }
    # the narrow front door reads only what its checks need: an import scan stays complete
    assert scan_plugin(str(NEW), plugin=plugin / "deepplug", select=["RK1"]).complete
    assert not scan_plugin(str(NEW), plugin=plugin / "deepplug", select=["RK402"]).complete


def test_pairwise_checks_find_nothing_at_old_so_skipping_them_there_is_safe():
    """Marking a per-tree check pairwise would drop its preexisting findings: refuse that."""
    from rebasekit.checks.registry import all_checks

    core = Path(__file__).parent / "fixtures"
    drift = Path(__file__).parent / "fixtures_drift"
    pairs = [
        (PLUGIN, NEW, OLD),
        (core / "plugin" / "tinyplug", core / "upstream_new", core / "upstream_old"),
        (drift / "plugin" / "driftplug", drift / "upstream_new", drift / "upstream_old"),
    ]
    pairwise = [c for c in all_checks() if c.pairwise]
    assert {code for c in pairwise for code in c.codes} == {
        "RK203",
        "RK218",
        "RK310",
        "RK311",
        "RK312",
        "RK313",
        "RK314",
        "RK402",
        "RK405",
        "RK406",
    }
    exercised = set()
    for plugin, new, old in pairs:
        ctx = scan_context(load_corpus(plugin), str(new), str(old))
        exercised |= {c.name for c in pairwise if list(c.func(ctx))}
        assert [f for c in pairwise for f in c.func(ctx.at_old())] == []
    assert exercised == {c.name for c in pairwise}, "a pairwise check the fixtures never reach"


def test_after_extraction_no_plugin_file_is_read_again(monkeypatch):
    """The corpus is the one view of the plugin: checks take its text, never the disk's."""
    import rebasekit.corpus.models

    corpus = load_corpus(PLUGIN)
    expected = [f.to_dict() for f in scan_plugin(str(NEW), old=str(OLD), corpus=corpus).findings]

    def refuse(path, *args, **kwargs):
        raise AssertionError(f"{path} read again after extraction")

    monkeypatch.setattr(rebasekit.corpus.models, "read_source_text", refuse)
    again = scan_plugin(str(NEW), old=str(OLD), corpus=corpus).findings
    assert [f.to_dict() for f in again] == expected and expected


def _evaluations(monkeypatch) -> list[tuple[str, int]]:
    """(check name, id of the index it scanned) for every evaluation of every check."""
    from rebasekit.checks import registry

    registry.all_checks()
    calls: list[tuple[str, int]] = []
    for key, check in list(registry._CHECKS.items()):

        def spy(ctx, _func=check.func, _name=check.name):
            calls.append((_name, id(ctx.new)))
            return list(_func(ctx))

        monkeypatch.setitem(registry._CHECKS, key, dataclasses.replace(check, func=spy))
    return calls


def test_each_check_runs_at_most_once_per_tree(monkeypatch):
    ctx = scan_context(load_corpus(PLUGIN), str(NEW), str(OLD))
    calls = _evaluations(monkeypatch)
    result = run_scan(ctx)
    assert len(calls) == len(set(calls))
    at_old = {name for name, tree in calls if tree == id(ctx.old)}
    assert at_old, "no check was re-evaluated at OLD: the drift verdict was not exercised"
    from rebasekit.checks.registry import all_checks

    pairwise = {c.name for c in all_checks() if c.pairwise}
    assert pairwise and not at_old & pairwise
    assert {f.drift.value for f in result.findings} == {"new", "preexisting"}


def test_old_named_as_the_new_tree_is_scanned_once_and_all_preexisting(monkeypatch):
    ctx = scan_context(load_corpus(PLUGIN), str(NEW), str(NEW))
    assert ctx.old is ctx.new
    calls = _evaluations(monkeypatch)
    result = run_scan(ctx)
    assert {tree for _, tree in calls} == {id(ctx.new)}
    assert len(calls) == len(set(calls))
    assert result.findings
    assert {f.drift.value for f in result.findings} == {"preexisting"}
