"""Garbage-collector thresholds for a process that builds many syntax trees.

A scan keeps thousands of parsed modules' nodes alive, and every node is a tracked
container: with the default thresholds (700 allocations) the collector runs a
generation-2 pass over all of them again and again while later files are parsed, so
the same file costs three times as much to parse late in a run as early. The trees
hold no reference cycles worth collecting promptly, so rarer collections lose nothing.
"""

from __future__ import annotations

import gc

# Generation-0 threshold: one collection per this many net allocations (default 700).
YOUNG = 100_000
# Young collections per generation-1 pass, and generation-1 passes per full pass.
MIDDLE = 50
OLD = 100


def for_syntax_trees() -> None:
    """Raise the collector's thresholds for the rest of this process (the CLI calls it)."""
    gc.set_threshold(YOUNG, MIDDLE, OLD)
