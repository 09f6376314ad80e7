"""Build real git repositories for the history tests, one commit per call.

Commits get increasing, fixed timestamps so dates in ledgers are reproducible.
"""

from __future__ import annotations

from pathlib import Path

import git

PYPROJECT = """\
[project]
name = "plug"
version = "0.1.0"
dependencies = ["packaging"]

[project.optional-dependencies]
# A comment that mentions "vllm=={comment}" must never be read as the pin.
vllm = [
    # "vllm==0.1.0" was the first pin, long ago
    "vllm=={pin}",  # the pin
]
bench = ["vllm=={bench}"]  # a baseline vLLM for benchmarks, not the pin
"""


def pyproject(pin: str, bench: str = "0.9.9", comment: str = "9.9.9") -> str:
    return PYPROJECT.format(pin=pin, bench=bench, comment=comment)


class GitRepo:
    """A repository under construction; ``commit`` writes files and commits them."""

    def __init__(self, root: Path, branch: str = "main") -> None:
        self.root = root
        self.repo = git.Repo.init(root, initial_branch=branch)
        with self.repo.config_writer() as cfg:
            cfg.set_value("user", "name", "Test")
            cfg.set_value("user", "email", "test@example.com")
        self.clock = 1_700_000_000

    def write(self, files: dict[str, str | None]) -> None:
        for rel, text in files.items():
            path = self.root / rel
            if text is None:
                if path.exists():
                    self.repo.index.remove([rel], working_tree=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            self.repo.index.add([rel])

    def commit(
        self,
        message: str,
        files: dict[str, str | None] | None = None,
        parents: list[git.Commit] | None = None,
    ) -> git.Commit:
        self.write(files or {})
        self.clock += 86_400
        stamp = f"{self.clock} +0000"
        kwargs = {"parent_commits": parents} if parents is not None else {}
        return self.repo.index.commit(message, author_date=stamp, commit_date=stamp, **kwargs)

    def branch(self, name: str, at: str | git.Commit | None = None) -> git.Head:
        return self.repo.create_head(name, at or self.repo.head.commit)

    def checkout(self, name: str) -> None:
        self.repo.git.checkout(name)

    def merge(self, other: str, message: str) -> git.Commit:
        """A real merge commit (first parent: the current branch), resolving to ``other``."""
        self.repo.git.merge(
            other,
            "--no-ff",
            "-X",
            "theirs",
            "-m",
            message,
            env={
                "GIT_AUTHOR_DATE": f"{self.clock + 1} +0000",
                "GIT_COMMITTER_DATE": f"{self.clock + 1} +0000",
            },
        )
        self.clock += 86_400
        return self.repo.head.commit
