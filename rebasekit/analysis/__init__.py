"""Deep analysis of a plugin against upstream trees: the breakage that name/import/signature scans cannot see.

Every module here is pure (source text, ``ast`` nodes or opened trees in, plain data
out: nothing is downloaded or written; :mod:`rebasekit.load` opens the trees) so the
checks in ``rebasekit/checks/`` and the ``port``/``diff-method``/``corpus lock``
commands share one implementation and tests can exercise it without a CLI.
"""
