"""Deep analysis of a plugin against upstream trees: the breakage that name/import/signature scans cannot see.

Every module here is pure (source text or ``ast`` nodes in, plain data out) so the
checks in ``rebasekit/checks/`` and the ``port``/``diff-method``/``corpus lock``
commands share one implementation and tests can exercise it without a CLI.
"""
