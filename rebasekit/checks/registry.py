"""The check registry: checks declare their codes and are found by code selection.

A check is a pure function ``(ctx: ScanContext) -> Iterable[Finding]`` decorated with
``@register_check(codes=[...], needs=[...])``. ``run_scan`` runs only the checks whose codes survive
``--select``/``--ignore``, so a narrow scan does not pay for unrelated work.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rebasekit.codes import CODES
from rebasekit.findings import Finding

CheckFunc = Callable[..., Iterable[Finding]]


@dataclass(frozen=True)
class Check:
    name: str
    codes: tuple[str, ...]
    func: CheckFunc
    # Inputs beyond NEW/OLD the loader must read for this check (see rebasekit.load).
    needs: frozenset[str] = frozenset()
    # Every finding is a change between OLD (or the base) and NEW, found by comparing the
    # two in one pass: it can never be preexisting, so the check is not run again at OLD.
    pairwise: bool = False


_CHECKS: dict[str, Check] = {}


def register_check(
    codes: Iterable[str],
    name: str | None = None,
    needs: Iterable[str] = (),
    pairwise: bool = False,
) -> Callable[[CheckFunc], CheckFunc]:
    """Register ``func`` as a check emitting ``codes`` (each must be defined in codes.py).

    ``needs`` names the extra inputs the check reads from the context ("base", "forks"),
    so the loader opens them only when such a check is selected. ``pairwise`` marks a
    check that compares OLD (or the base) with NEW itself (see :class:`Check`).
    """
    code_tuple = tuple(codes)
    unknown = [c for c in code_tuple if c not in CODES]
    if unknown:
        raise ValueError(f"check uses undefined codes {unknown}; define them in rebasekit/codes.py")

    def decorator(func: CheckFunc) -> CheckFunc:
        key = name or f"{func.__module__}.{func.__name__}"
        _CHECKS[key] = Check(key, code_tuple, func, frozenset(needs), pairwise)
        return func

    return decorator


def all_checks() -> list[Check]:
    """Every registered check, importing the modules listed in ``CHECK_MODULES`` first."""
    from rebasekit.checks import CHECK_MODULES

    for module in CHECK_MODULES:
        importlib.import_module(module if "." in module else f"rebasekit.checks.{module}")
    return list(_CHECKS.values())


def code_selected(code: str, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> bool:
    """Prefix match: ``--select RK1`` keeps RK101..RK199; ``--ignore`` wins over select."""
    select, ignore = tuple(select), tuple(ignore)
    if select and not any(code.startswith(s) for s in select):
        return False
    return not any(code.startswith(i) for i in ignore)
