"""pytest plugin for the mutation run: every session starts with no patch applied.

mutmut runs pytest several times in one process (stats, clean run, then forks of it).
``arctic_inference.patching`` keys applied patches by module and qualified name, so a
test's patch from the previous session would make the same test's ``apply()`` a no-op
in the next one. A fresh registry gives each session what a new interpreter would.
"""

from __future__ import annotations

import pytest


def pytest_sessionstart(session: pytest.Session) -> None:
    from arctic_inference import patching

    patching._registry.clear()
    patching._undo.clear()
