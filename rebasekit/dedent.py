"""``textwrap.dedent``, exactly, by lines instead of by regular expressions.

The deep checks dedent the source of upstream classes and methods to parse them on their
own (a class of 8,000 lines among them); ``textwrap.dedent`` runs three regular
expressions over the whole text, and the first (``^[ \\t]+$``) tries a match at every
blank of the indentation. The same result from string methods on each line is several
times faster. Tested against ``textwrap.dedent`` on edge cases and on real sources.
"""

from __future__ import annotations

_BLANKS = " \t"


def dedent(text: str) -> str:
    """What ``textwrap.dedent(text)`` returns.

    As there: lines are split at ``\\n`` only; a line of nothing but spaces and tabs
    becomes empty; the margin is the longest run of leading spaces and tabs common to
    every other line, and it is removed from each of them.
    """
    lines = text.split("\n")
    margin: str | None = None
    for i, line in enumerate(lines):
        body = line.lstrip(_BLANKS)
        if not body:
            if line:
                lines[i] = ""  # blanks only: emptied, and not part of the margin
            continue
        indent = line[: len(line) - len(body)]
        if margin is None or margin.startswith(indent):
            margin = indent
        elif not indent.startswith(margin):
            margin = _common_prefix(margin, indent)
    if margin:
        cut = len(margin)
        lines = [line[cut:] if line.startswith(margin) else line for line in lines]
    return "\n".join(lines)


def _common_prefix(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return a[:i]
    return a[: min(len(a), len(b))]
