"""The newer-grammar rewrite behind :func:`rebasekit.pyparse.parse`, through libcst.

Kept apart so that libcst (a fifth of a second to import) loads only when ``ast``
refuses a file, not for every run.
"""

from __future__ import annotations

import ast

import libcst as cst


class _Lower(cst.CSTTransformer):
    """Newer-than-3.10 syntax rewritten into forms every supported ``ast`` reads."""

    def __init__(self, strings: bool) -> None:
        super().__init__()
        self.strings = strings

    def leave_TypeAlias(
        self, original_node: cst.TypeAlias, updated_node: cst.TypeAlias
    ) -> cst.Assign:
        return cst.Assign(
            targets=[cst.AssignTarget(target=updated_node.name)], value=updated_node.value
        )

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        return (
            updated_node.with_changes(type_parameters=None)
            if updated_node.type_parameters
            else updated_node
        )

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        return (
            updated_node.with_changes(type_parameters=None)
            if updated_node.type_parameters
            else updated_node
        )

    def leave_FormattedString(
        self, original_node: cst.FormattedString, updated_node: cst.FormattedString
    ) -> cst.BaseExpression:
        return (
            cst.SimpleString('""')
            if self.strings and "\n" not in cst.Module([]).code_for_node(original_node)
            else updated_node
        )

    def leave_TemplatedString(
        self, original_node: cst.TemplatedString, updated_node: cst.TemplatedString
    ) -> cst.BaseExpression:
        return (
            cst.SimpleString('""')
            if "\n" not in cst.Module([]).code_for_node(original_node)
            else updated_node
        )


def lowered(source: str | bytes) -> str | None:
    """``source`` rewritten into the running grammar, or None if libcst cannot read it either."""
    try:
        module = cst.parse_module(source)
    except (cst.ParserSyntaxError, ValueError, RecursionError):
        return None
    for strings in (False, True):  # touch f-strings only if the rest was not enough
        try:
            code = module.visit(_Lower(strings)).code
            ast.parse(code)
            return code
        except (SyntaxError, ValueError, RecursionError):
            continue
    return None
