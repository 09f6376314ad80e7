"""The static reader and the runtime patch framework speak one patch vocabulary.

rebasekit never imports the plugin it reads, so it keeps its own copy of the names the
runtime treats specially; this test is what keeps the copies equal.
"""

from __future__ import annotations

from arctic_inference import patching
from rebasekit.corpus import extract


def test_orig_prefix_is_the_same():
    assert extract.ORIG_PREFIX == patching.ORIG_PREFIX


def test_class_machinery_is_the_same_but_for_the_frameworks_own_slot():
    own = {name for name in patching._CLASS_MACHINERY if not name.startswith("__")}
    assert own <= set(vars(patching.ArcticPatch))  # the framework's own slots, never in source
    assert extract.CLASS_MACHINERY == patching._CLASS_MACHINERY - own
