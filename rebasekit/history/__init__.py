"""Pin evolution: which vLLM pins a plugin has gone through and what changed with each.

``compare-pins`` builds a ledger whose columns are pins (branches, commits that bumped
the pin, the working tree) and whose rows are probes evaluated on each column's files.
Everything here reads git objects through gitpython; nothing is checked out.
"""
