"""``python -m rebasekit``: the same command line as the ``rebasekit`` script."""

from rebasekit.cli import main

main()
