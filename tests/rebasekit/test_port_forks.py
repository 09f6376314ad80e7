"""Porting forked files: what is merged, what the header becomes, what is skipped and why."""

from __future__ import annotations

from synth_helpers import plugin, upstream

from rebasekit.analysis.portplan import plan_port
from rebasekit.load import as_index, load_forks
from rebasekit.scan import load_corpus

F = "def f(x):\n    a = x\n    b = a\n    return b\n"
G = "def g(y):\n    a = y\n    b = a\n    return b\n"
OLD = F + "\n\n" + G
NEW = F.replace("return b", "return b + 1") + "\n\n" + G  # upstream changes f
OURS = F + "\n\n" + G.replace("b = a", "b = a * 2  # ours")  # we change g
MERGED = NEW.replace(G, G.replace("b = a", "b = a * 2  # ours"))


def plan(tmp_path, files: dict[str, str], new_files: dict[str, str], old_files=None):
    old_files = old_files or {"util.py": OLD, "gone.py": OLD}
    old = as_index(str(upstream(tmp_path / "old", "1.0.0", old_files)))
    new = as_index(str(upstream(tmp_path / "new", "1.1.0", new_files)))
    corpus = load_corpus(plugin(tmp_path / "plug", files), ["Patch"])
    return plan_port(corpus, old, new, load_forks(corpus, old, new))


def test_declared_fork_merges_upstream_and_bumps_its_header(tmp_path) -> None:
    text = "# rebasekit: fork-of vllm/util.py@1.0.0\n" + OURS
    p = plan(tmp_path, {"fork.py": text}, {"util.py": NEW})
    (item,) = p.items
    assert (item.kind, item.relpath, item.name) == ("fork", "tp/fork.py", "vllm/util.py")
    assert (item.start, item.end, item.conflicts) == (1, len(text.splitlines()), 0)
    assert (item.ours, item.base, item.theirs) == (text, OLD, NEW)
    # upstream's f change and our g change, under the bumped header
    assert item.merged == "# rebasekit: fork-of vllm/util.py@1.1.0\n" + MERGED
    assert p.skipped == []


def test_detected_fork_is_merged_without_a_header(tmp_path) -> None:
    p = plan(tmp_path, {"copy.py": OURS}, {"util.py": NEW}, old_files={"util.py": OLD})
    (item,) = p.items
    assert (item.relpath, item.name) == ("tp/copy.py", "vllm/util.py")
    assert item.merged == MERGED


def test_fork_of_a_removed_file_is_skipped_with_the_reason(tmp_path) -> None:
    text = "# rebasekit: fork-of vllm/gone.py@1.0.0\n" + OURS
    p = plan(tmp_path, {"fork.py": text}, {"util.py": NEW})
    assert p.items == []
    assert p.skipped == ["tp/fork.py: fork base unavailable or upstream file gone"]
