"""The validation plan for a rebase: which tests cover what changed, run in which order.

``testmap`` reads the test suite (imports, markers, names) to map plugin modules and
findings to tests; ``risks`` maps findings to the phase and first runtime step they are
likely to break; ``plan`` assembles the phases; ``render`` writes the markdown, with a
results column filled from ``--record`` so the runbook doubles as the rebase report.
"""
