"""RK406: methods of a copied upstream class whose upstream signature changed."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rebasekit.analysis.mirrorclasses import mirror_classes
from rebasekit.analysis.pluginclasses import is_static
from rebasekit.checks.registry import register_check
from rebasekit.checks.sigcompare import drop_receiver
from rebasekit.context import ScanContext
from rebasekit.findings import Finding
from rebasekit.index.models import Signature
from rebasekit.index.visitor import signature_of
from rebasekit.records import CopiedClassSignatureDrift


def _names(sig: Signature) -> list[str]:
    return [p.name for p in sig.params]


@register_check(codes=["RK406"], needs=["base"], pairwise=True)
def check_copied_signatures(ctx: ScanContext) -> Iterator[Finding]:
    base = ctx.base
    if base is None or base is ctx.new:
        return
    for mc in mirror_classes(ctx.corpus, base):
        now = ctx.new.resolve(mc.upstream.qualname)
        if now is None or now.kind != "class":
            continue  # the class itself is gone or moved: the import checks say so
        funcs = {
            n.name: n
            for n in mc.node.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in mc.shared
        }
        for name, func in sorted(funcs.items()):
            was, new = base.lookup_member(mc.upstream, name), ctx.new.lookup_member(now, name)
            if was is None or new is None or was.signature is None or new.signature is None:
                continue
            ours, old_sig, new_sig = signature_of(func), was.signature, new.signature
            if not is_static(func):
                ours, old_sig, new_sig = (
                    drop_receiver(ours),
                    drop_receiver(old_sig),
                    drop_receiver(new_sig),
                )
            if _names(ours) != _names(old_sig) or _names(old_sig) == _names(new_sig):
                continue  # the copy never followed upstream's signature, or nothing changed
            old_names, new_names = set(_names(old_sig)), set(_names(new_sig))
            changes = [(p, "removed") for p in _names(old_sig) if p not in new_names]
            changes += [(p, "added") for p in _names(new_sig) if p not in old_names]
            if not changes:
                changes = [("", "reordered")]
            for param, change in changes:
                record = CopiedClassSignatureDrift(
                    new.qualname,
                    f"{mc.node.name}.{name}",
                    param,
                    change=change,
                    old_signature=was.signature.render(),
                    new_signature=new.signature.render(),
                    old_tree=base.tree.version or base.tree.label,
                    tree=ctx.new.tree.version or ctx.new.tree.label,
                )
                yield ctx.report(
                    record,
                    plugin=ctx.plugin_loc(mc.relpath, func.lineno, f"{mc.node.name}.{name}"),
                    upstream=ctx.upstream_loc(new),
                    suggestion=f"follow the upstream signature {new.signature.render()}",
                )
