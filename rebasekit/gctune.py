"""Garbage-collector thresholds for a process that builds many syntax trees.

A scan keeps thousands of parsed modules' nodes alive, and every node is a tracked
container: with the default thresholds (700 allocations) the collector runs a
generation-2 pass over all of them again and again while later files are parsed, so
the same file costs three times as much to parse late in a run as early. The trees
hold no reference cycles worth collecting promptly, so rarer collections lose nothing.

At 100,000 a warm scan still spent 0.1 s of its 1.3 s in the collector (mostly middle
passes over the millions of nodes that survived young ones); at 1,000,000 it spends
0.01 s, and a cold scan's peak memory grows by 7 MB (416 to 423 MB): what waits longer
for a young pass is bounded by that pass.
"""

from __future__ import annotations

import gc

# Generation-0 threshold: one collection per this many net allocations (default 700).
YOUNG = 1_000_000
# Young collections per generation-1 pass, and generation-1 passes per full pass.
MIDDLE = 50
OLD = 100


def for_syntax_trees() -> None:
    """Raise the collector's thresholds for the rest of this process (the CLI calls it)."""
    gc.set_threshold(YOUNG, MIDDLE, OLD)
