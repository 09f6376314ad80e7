"""The three-way merge's failures reach the user as one clear error, never as a merge."""

from __future__ import annotations

import git
import pytest

from rebasekit.analysis.merge import three_way
from rebasekit.errors import RebasekitError


def test_missing_git_is_named_with_the_fix(monkeypatch) -> None:
    def no_git(self, *args, **kwargs):
        raise git.GitCommandNotFound("git", "not found")

    monkeypatch.setattr(git.Git, "execute", no_git)
    with pytest.raises(RebasekitError) as err:
        three_way("a\n", "a\n", "b\n")
    assert err.value.render() == (
        "git is not installed\nhint: install git; `port` merges with git merge-file"
    )


@pytest.mark.parametrize("status", [-9, 255])
def test_merge_file_crash_is_an_error_not_a_conflict_count(monkeypatch, status: int) -> None:
    monkeypatch.setattr(git.Git, "execute", lambda self, *a, **k: (status, "", "fatal: boom\n"))
    with pytest.raises(RebasekitError) as err:
        three_way("a\n", "a\n", "b\n")
    assert err.value.message == "git merge-file failed: fatal: boom"


def test_conflict_markers_carry_the_labels() -> None:
    result = three_way("a\n", "x\n", "y\n", labels=("mine", "old", "new"))
    assert result.conflicts == 1
    assert result.text == "<<<<<<< mine\nx\n=======\ny\n>>>>>>> new\n"
