"""Compare an override's signature with the upstream definition it replaces.

Pure: two :class:`Signature` objects in, a list of :class:`SigDiff` out. The receiver
(``self``/``cls``) is dropped by the caller for methods, so a module-level function and
a method compare the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebasekit.index.models import ParamKind, Signature

_POSITIONAL = (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)
_VAR = (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD)


@dataclass(frozen=True)
class SigDiff:
    code: str  # RK210..RK215
    param: str
    message: str
    upstream_default: str | None = None
    severity: str | None = None  # override of the code's default severity


def _norm(text: str | None) -> str | None:
    return None if text is None else text.replace('"', "'").replace(" ", "")


def drop_receiver(sig: Signature) -> Signature:
    params = sig.params
    if params and params[0].kind in _POSITIONAL:
        params = params[1:]
    return Signature(params, sig.returns, sig.is_async)


def compare(override: Signature, upstream: Signature) -> list[SigDiff]:
    """What a caller written against ``upstream`` would trip over in ``override``."""
    diffs: list[SigDiff] = []
    o_by = {p.name: p for p in override.params}
    u_by = {p.name: p for p in upstream.params}
    o_varpos, o_varkw = override.var_positional, override.var_keyword
    u_varpos, u_varkw = upstream.var_positional, upstream.var_keyword
    renamed_o: set[str] = set()
    renamed_u: set[str] = set()
    for op, up in zip(override.positional, upstream.positional):
        if op.name != up.name and op.name not in u_by and up.name not in o_by:
            renamed_o.add(op.name)
            renamed_u.add(up.name)
            diffs.append(
                SigDiff("RK212", up.name, f"parameter '{op.name}' is called '{up.name}' upstream")
            )
    for up in upstream.params:
        if up.kind in _VAR or up.name in o_by or up.name in renamed_u:
            continue
        absorbed = (up.kind is ParamKind.POSITIONAL_ONLY and o_varpos) or (
            up.kind is not ParamKind.POSITIONAL_ONLY and o_varkw
        )
        if absorbed:
            continue
        default = (
            f" (default {up.default})"
            if up.default is not None
            else " (no default: every caller passes it)"
        )
        diffs.append(
            SigDiff(
                "RK210",
                up.name,
                f"upstream added parameter '{up.render()}'{default}; the override does not accept it",
                up.default,
                severity="warning" if up.default is not None else None,
            )
        )
    for op in override.params:
        if op.kind in _VAR or op.name in u_by or op.name in renamed_o:
            continue
        if u_varkw is not None and op.kind is not ParamKind.POSITIONAL_ONLY:
            continue
        if op.default is not None:
            diffs.append(
                SigDiff(
                    "RK211",
                    op.name,
                    f"the override takes '{op.render()}', which upstream does not have "
                    "(harmless while it has a default)",
                    severity="info",
                )
            )
        else:
            diffs.append(
                SigDiff(
                    "RK211",
                    op.name,
                    f"the override requires '{op.render()}', which upstream removed; "
                    "upstream callers no longer pass it",
                    severity="error",
                )
            )
    if u_varpos is not None and o_varpos is None:
        diffs.append(
            SigDiff(
                "RK214",
                "*" + u_varpos.name,
                f"upstream takes *{u_varpos.name}; the override has no *args",
            )
        )
    if u_varkw is not None and o_varkw is None:
        diffs.append(
            SigDiff(
                "RK214",
                "**" + u_varkw.name,
                f"upstream takes **{u_varkw.name}; the override has no **kwargs",
            )
        )
    for name, op in o_by.items():
        up = u_by.get(name)
        if up is None or op.kind in _VAR:
            continue
        if op.kind is not up.kind:
            diffs.append(
                SigDiff(
                    "RK214",
                    name,
                    f"parameter '{name}' is {up.kind.value} upstream but {op.kind.value} in the override",
                )
            )
        if _norm(op.default) != _norm(up.default):
            diffs.append(
                SigDiff(
                    "RK215",
                    name,
                    f"default of '{name}' is {_show(up.default)} upstream but "
                    f"{_show(op.default)} in the override",
                    up.default,
                )
            )
    o_order = [p.name for p in override.positional if p.name in u_by]
    u_order = [p.name for p in upstream.positional if p.name in o_by]
    if o_order != u_order and sorted(o_order) == sorted(u_order):
        diffs.append(
            SigDiff(
                "RK213",
                ",".join(u_order),
                f"positional order is ({', '.join(u_order)}) upstream but ({', '.join(o_order)}) in the override",
            )
        )
    return diffs


def _show(default: str | None) -> str:
    return "required" if default is None else f"'{default}'"


def norm_default(text: str | None) -> str | None:
    """A default's text, normalised as the comparison above normalises it."""
    return _norm(text)
