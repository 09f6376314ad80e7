"""A tiny plugin for rebasekit's deep-drift tests; every check has a positive and a negative case."""
