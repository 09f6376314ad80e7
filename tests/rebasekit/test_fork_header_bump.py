"""A port bumps the fork header exactly where a header is recognised: the first 10 lines."""

from __future__ import annotations

import pytest

from rebasekit.analysis.forkdecl import header_decl
from rebasekit.analysis.portplan import _bump_header

HEADER = "# rebasekit: fork-of vllm/x.py@1.0.0\n"


@pytest.mark.parametrize(("line", "recognised"), [(1, True), (10, True), (11, False)])
def test_bump_matches_the_header_window(line: int, recognised: bool) -> None:
    text = "\n" * (line - 1) + HEADER + "X = 1\n"
    assert (header_decl("tp/f.py", text) is not None) is recognised
    bumped = _bump_header(text, "1.1.0")
    expected = text.replace("@1.0.0", "@1.1.0") if recognised else text
    assert bumped == expected


def test_only_the_header_line_changes() -> None:
    text = HEADER + "URL = 'vllm/x.py@1.0.0'\n"
    assert (
        _bump_header(text, "2.0") == "# rebasekit: fork-of vllm/x.py@2.0\nURL = 'vllm/x.py@1.0.0'\n"
    )
