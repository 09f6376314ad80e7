"""Deep analysis against upstream trees: the breakage name/import/signature scans miss.

Every module here is pure (source text, ``ast`` nodes or opened trees in, plain data
out; nothing is downloaded and no user file is written: :mod:`rebasekit.load` opens
the trees, ``commands/portwrite.py`` writes) so the
checks in ``rebasekit/checks/`` and the ``port``/``diff-method``/``corpus lock``
commands share one implementation and tests can exercise it without a CLI.
"""
