"""RK21x: overrides (methods, ``__init__``, properties, module functions) against the
upstream definition they replace, at the scanned tree."""

from __future__ import annotations

from collections.abc import Iterator

from rebasekit import codes
from rebasekit.analysis.reachers import Reach, reach
from rebasekit.checks.registry import register_check
from rebasekit.checks.sigcompare import compare, drop_receiver, norm_default
from rebasekit.checks.targets import resolve_target, target_member
from rebasekit.context import ScanContext
from rebasekit.corpus.models import RULE_REGISTRY, PatchAttr, PatchClass
from rebasekit.findings import Finding, Severity
from rebasekit.index import Symbol
from rebasekit.index.models import ParamKind
from rebasekit.records import RECORDS, OverrideKindChanged

_FUNCTION_KINDS = ("method", "property", "staticmethod", "classmethod")


@register_check(codes=["RK210", "RK211", "RK212", "RK213", "RK214", "RK215", "RK216"])
def check_signatures(ctx: ScanContext) -> Iterator[Finding]:
    for patch in ctx.corpus.patches:
        res = resolve_target(ctx.new, patch)
        if res is None or not res.found or res.symbol is None:
            continue
        target = res.symbol
        for attr in patch.attributes:
            member = target_member(ctx.new, target, attr.name)
            if not member.found or member.symbol is None:
                continue  # the patch adds this name (or upstream serves it dynamically)
            yield from _compare_attr(
                ctx, patch, attr, member.symbol, module_target=target.kind == "module"
            )


def _compare_attr(
    ctx: ScanContext, patch: PatchClass, attr: PatchAttr, up: Symbol, module_target: bool
) -> Iterator[Finding]:
    loc = ctx.plugin_loc(patch.relpath, attr.lineno, f"{patch.name}.{attr.name}")
    up_loc = ctx.upstream_loc(up)
    up_kind = "function" if (module_target and up.kind == "function") else up.member_kind
    own_kind = "function" if (module_target and attr.kind == "method") else attr.kind
    if attr.kind not in _FUNCTION_KINDS:
        return
    if _plain_function_for_static(patch, attr, up_kind):
        own_kind = up_kind  # reached through the class, a plain function is not bound
    if patch.rule == RULE_REGISTRY:
        yield from _compare_subclass_member(ctx, patch, attr, up, own_kind, up_kind)
        return
    if up_kind == "class" and own_kind == "function":
        return  # a factory function in place of a class: its constructor is its own
    if up_kind != own_kind and not (up_kind == "class" and own_kind == "method"):
        yield ctx.report(
            OverrideKindChanged(attr.name, patch.name, own_kind, up_kind, up.qualname),
            plugin=loc,
            upstream=up_loc,
            suggestion=f"make the override a {up_kind} or retarget it",
        )
        return
    if attr.signature is None or up.signature is None or attr.is_passthrough:
        return  # (self, *args, **kwargs) accepts whatever upstream accepts
    if attr.kind == "property":
        return
    ours, theirs = attr.signature, up.signature
    if _plain_function_for_static(patch, attr, up_kind):
        theirs = drop_receiver(theirs) if up_kind == "classmethod" else theirs
    elif not module_target and own_kind != "staticmethod":
        ours, theirs = drop_receiver(ours), drop_receiver(theirs)
    yield from _report_diffs(ctx, patch, attr, up, ours, theirs)


# differences a caller written against upstream trips over; they fail only where reached
_CALLER_BOUND = ("RK210", "RK211", "RK212", "RK213")

_RECEIVING = ("method", "classmethod", "staticmethod")


def _plain_function_for_static(patch: PatchClass, attr: PatchAttr, up_kind: str) -> bool:
    """A plain function assigned over a static or class method, its first parameter no ``self``."""
    if patch.is_class or attr.kind != "method" or up_kind not in ("staticmethod", "classmethod"):
        return False
    params = attr.signature.params if attr.signature is not None else ()
    return not params or params[0].name != "self"


def _compare_subclass_member(
    ctx: ScanContext, patch: PatchClass, attr: PatchAttr, up: Symbol, own_kind: str, up_kind: str
) -> Iterator[Finding]:
    """A registered subclass overrides by inheritance: callers reach it through the instance.

    Its constructor is its own (the registry builds it with the subclass's arguments), and
    method, classmethod and staticmethod are interchangeable for such a call as long as
    the parameters after the receiver agree.
    """
    if attr.name in ("__init__", "__new__") or attr.signature is None or up.signature is None:
        return
    if own_kind in _RECEIVING and up_kind in _RECEIVING:
        ours = attr.signature if own_kind == "staticmethod" else drop_receiver(attr.signature)
        theirs = up.signature if up_kind == "staticmethod" else drop_receiver(up.signature)
        if _accepts_anything(theirs):
            return  # a base declared (*args, **kwargs): each subclass names its own parameters
        if not attr.is_passthrough:
            yield from _report_diffs(ctx, patch, attr, up, ours, theirs)


def _accepts_anything(sig) -> bool:
    kinds = [p.kind for p in sig.params]
    return kinds == [ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD]


def _report_diffs(
    ctx: ScanContext, patch: PatchClass, attr: PatchAttr, up: Symbol, ours, theirs
) -> Iterator[Finding]:
    loc = ctx.plugin_loc(patch.relpath, attr.lineno, f"{patch.name}.{attr.name}")
    up_loc = ctx.upstream_loc(up)
    met: Reach | None = None
    for diff in compare(ours, theirs):
        severity = Severity(diff.severity) if diff.severity else None
        note = None
        if (
            diff.code in _CALLER_BOUND
            and Severity(severity or codes.get(diff.code).severity) == Severity.ERROR
        ):
            if met is None:
                target = ctx.new.resolve(patch.target) if patch.target else None
                met = reach(
                    ctx.new,
                    ctx.corpus,
                    attr.name,
                    ours,
                    theirs,
                    bound=ours is not attr.signature,
                    module_function=target is not None and target.kind == "module",
                    target=target.qualname if target is not None else None,
                )
            if met.harmless:
                severity, note = Severity.INFO, met.describe()
        record = RECORDS[diff.code](
            attr.name,
            diff.param,
            patch.name,
            up.qualname,
            diff.message,
            up.signature.render(),
            attr.signature.render(),
            **(_kept_old_default(ctx, up, ours, diff.param) if diff.code == "RK215" else {}),
        )
        found = ctx.report(
            record,
            plugin=loc,
            upstream=up_loc,
            severity=severity,
            suggestion=_suggest(diff.code, theirs, up),
        )
        if note:
            found = found.with_reason(f"cannot fail: {note}", "unreached_by_upstream", note)
        yield found


def _kept_old_default(ctx: ScanContext, up: Symbol, ours, name: str) -> dict[str, str]:
    """``old_default``/``old_tree`` when the override's default is upstream's default at OLD.

    That is the trace of a changed upstream default the override still re-declares.
    """
    if ctx.old is None:
        return {}
    was = ctx.old.resolve(up.qualname)
    if was is None or was.signature is None:
        return {}
    mine = next((p for p in ours.params if p.name == name), None)
    old = next((p for p in was.signature.params if p.name == name), None)
    if mine is None or old is None or old.default is None:
        return {}
    if norm_default(mine.default) != norm_default(old.default):
        return {}
    return {"old_default": old.default, "old_tree": ctx.old.tree.version or ctx.old.tree.label}


def _suggest(code: str, theirs, up: Symbol) -> str:
    return f"match the upstream signature {up.signature.render() if up.signature else ''}".strip()
