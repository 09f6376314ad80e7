"""RK202 for a patched module that moved: the new module path and what to do."""

from __future__ import annotations

from synth_helpers import line_of, plugin, upstream

from rebasekit.findings import Location
from rebasekit.scan import scan_plugin

PATCHING = "from typing import Generic, TypeVar\n\nT = TypeVar('T')\n\n\nclass Patch(Generic[T]):\n    pass\n"
PLUGIN = """\
import vllm.old.utils as utils
from tp.patching import Patch


class UtilsPatch(Patch[utils]):
    def helper(x):
        return x
"""


def test_patched_module_that_moved_deeper_is_found_by_its_last_name(tmp_path) -> None:
    body = "def helper(x):\n    return x\n"
    old = upstream(tmp_path / "old", "1.0.0", {"old/__init__.py": "", "old/utils.py": body})
    new = upstream(
        tmp_path / "new",
        "1.1.0",
        {
            "old/__init__.py": "",
            "new/__init__.py": "",
            "new/place/__init__.py": "",
            "new/place/utils.py": body,
        },
    )
    pkg = plugin(tmp_path / "plug", {"m.py": PLUGIN, "patching.py": PATCHING})
    (f,) = scan_plugin(
        str(new), old=str(old), plugin=pkg, patch_bases=["Patch"], select=["RK202"]
    ).findings
    assert f.plugin == Location(
        "tp/m.py", line_of(PLUGIN, "class UtilsPatch(Patch[utils]):"), None, "UtilsPatch"
    )
    assert f.message == "patch target module vllm.old.utils moved to vllm.new.place.utils"
    assert f.suggestion == "import vllm.new.place.utils and patch that"
