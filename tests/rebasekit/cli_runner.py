"""A CLI test runner that cannot mistake a crash for an exit code.

Typer's ``CliRunner`` catches every exception a command raises and reports it as exit
code 1, which is also rebasekit's "findings" code: a test expecting findings would pass
on a crash. :class:`StrictRunner` re-raises anything that is not a ``SystemExit`` (the
way every deliberate exit leaves a command), so the test fails with the traceback.
"""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner


class StrictRunner(CliRunner):
    def invoke(self, *args: Any, **kwargs: Any):  # type: ignore[override]
        result = super().invoke(*args, **kwargs)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(
                f"the command raised {type(result.exception).__name__} instead of exiting; output:\n"
                f"{result.output}"
            ) from result.exception
        return result


def invoke(app: Any, args: list[str], **kwargs: Any):
    """``StrictRunner().invoke(app, args)``, with every argument made a string."""
    return StrictRunner().invoke(app, [str(a) for a in args], **kwargs)
