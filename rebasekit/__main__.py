"""``python -m rebasekit``: the same command line as the ``rebasekit`` script."""

from rebasekit.cli import app

app(prog_name="rebasekit")
