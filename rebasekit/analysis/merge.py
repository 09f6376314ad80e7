"""Line-based three-way merge (base = upstream at OLD, ours = plugin, theirs = upstream at NEW).

``git merge-file`` does the merging (through gitpython's command wrapper) because its
diff3 algorithm and conflict markers are what every reviewer already reads; the input
texts are written to a private temporary folder and nothing in any repository changes.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from rebasekit.errors import RebasekitError


@dataclass(frozen=True)
class MergeResult:
    """The merged text; ``conflicts`` counts conflict regions left as markers in ``text``."""

    text: str
    conflicts: int

    @property
    def clean(self) -> bool:
        return self.conflicts == 0


def three_way(
    base: str, ours: str, theirs: str, labels: tuple[str, str, str] = ("plugin", "OLD", "NEW")
) -> MergeResult:
    """Merge upstream's OLD→NEW change into ``ours``; conflicts come back as markers."""
    import git

    for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        if text and not text.endswith("\n"):
            raise ValueError(f"{name} text must end with a newline")
    with tempfile.TemporaryDirectory(prefix="rebasekit-merge-") as tmp:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            p = Path(tmp) / name
            p.write_text(text, encoding="utf-8")
            paths.append(str(p))
        cmd = ["git", "merge-file", "-p", "-L", labels[0], "-L", labels[1], "-L", labels[2], *paths]
        try:
            status, out, err = git.Git(tmp).execute(
                cmd, with_extended_output=True, with_exceptions=False, strip_newline_in_stdout=False
            )
        except git.GitCommandNotFound as exc:  # pragma: no cover - depends on the machine
            raise RebasekitError(
                "git is not installed", hint="install git; `port` merges with git merge-file"
            ) from exc
    if status < 0 or status > 127:
        raise RebasekitError(f"git merge-file failed: {err.strip()}")
    return MergeResult(out, int(status))
