"""Parse Python source of any grammar vLLM may use, whatever interpreter runs rebasekit.

The stdlib ``ast`` only reads the running interpreter's grammar: on Python 3.11 one
``type A = int`` line (3.12) makes a whole upstream module unparsable, and every
definition in it would silently drop out of the analysis. libcst's native parser reads
the newest grammar; when ``ast`` refuses a file, libcst parses it and the few newer
constructs are rewritten into older equivalents that keep every name, signature and line
number the analysis reads (``type X = v`` becomes ``X = v``; PEP 695 type parameters are
dropped; f- and t-strings that only the new grammar allows become plain strings), and
``ast`` parses that. Only a file that neither parser reads raises ``SyntaxError``.
"""

from __future__ import annotations

import ast


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse``, falling back to the newer-grammar rewrite; SyntaxError if neither reads it."""
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as first:
        from rebasekit.cstlower import lowered  # libcst loads only for such a file

        code = lowered(source)
        if code is None:
            raise first from None
        return ast.parse(code, filename=filename)
