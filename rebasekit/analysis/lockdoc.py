"""The lock document: what the plugin binds to upstream at one pin, as plain data.

Built from the same analysis the checks use (resolved targets, override fingerprints,
attribute provisions, call-site shapes, fork bases), so the lock records exactly what a
scan would compare. Writing, reading and diffing the file is :mod:`rebasekit.corpus.lock`.
"""

from __future__ import annotations

from typing import Any

from rebasekit.analysis.attrs import attribute_uses, provision
from rebasekit.analysis.bodies import definitions, similarity
from rebasekit.analysis.callsites import call_sites
from rebasekit.analysis.defnodes import call_params
from rebasekit.analysis.forkdecl import ForkInputs
from rebasekit.analysis.forkstate import fork_states
from rebasekit.analysis.overrides import (
    MIRROR_THRESHOLD,
    override_member,
    overrides,
    symbol_definition,
)
from rebasekit.corpus.lock import SCHEMA
from rebasekit.corpus.models import PluginCorpus
from rebasekit.index import CodeIndex
from rebasekit.index.models import Signature


def build_lock(corpus: PluginCorpus, index: CodeIndex, fork_inputs: ForkInputs) -> dict[str, Any]:
    """The lock document for ``corpus`` against the tree of ``index``.

    ``fork_inputs`` holds the declared forks and their recorded trees, opened by the
    caller (:func:`rebasekit.load.load_forks`).
    """
    patches: list[dict[str, Any]] = []
    override_defs = {(p.name, a.name): d for p, a, d in overrides(corpus)}
    for patch in sorted(corpus.patches, key=lambda p: (p.relpath, p.name)):
        target = index.resolve(patch.target) if patch.target else None
        entry: dict[str, Any] = {
            "patch": f"{patch.modname}.{patch.name}",
            "target": patch.target,
            "target_resolved": target.qualname if target else None,
            "target_kind": target.kind if target else None,
            "attributes": [],
            "orig_aliases": sorted(
                [{"alias": a.alias, "attr": a.attr} for a in patch.orig_aliases],
                key=lambda d: d["alias"],
            ),
            "reads": [],
        }
        for attr in sorted(patch.attributes, key=lambda a: a.name):
            up = override_member(index, patch, attr.name) if target is not None else None
            item: dict[str, Any] = {
                "name": attr.name,
                "kind": attr.kind,
                "action": "replace" if up else "add",
            }
            ours = override_defs.get((patch.name, attr.name))
            if ours is not None:
                item["plugin_fingerprint"] = ours.fingerprint
            if up is not None:
                item["upstream"] = up.qualname
                item["upstream_signature"] = up.signature.render() if up.signature else None
                up_def = symbol_definition(up)
                if up_def is not None:
                    item["upstream_fingerprint"] = up_def.fingerprint
                    if ours is not None:
                        item["mirrors"] = similarity(ours, up_def) >= MIRROR_THRESHOLD
            entry["attributes"].append(item)
        if target is not None and target.kind == "class":
            for use in attribute_uses(corpus, patch):
                prov = provision(index, target, use.attr)
                entry["reads"].append(
                    {
                        "attr": use.attr,
                        "accessors": sorted(use.accessors),
                        "assigned_as": sorted({f"{k}:{d}" for k, d in prov.kinds()}),
                        "provided": prov.provided,
                    }
                )
            entry["reads"].sort(key=lambda d: d["attr"])
        patches.append(entry)

    calls: dict[str, dict[str, Any]] = {}
    for site in call_sites(corpus, index):
        c = site.call
        sym = index.resolve(c.callee)
        params = (
            call_params(index, sym, bound=site.bound, raw_function=site.raw_function)
            if sym is not None
            else None
        )
        rec = calls.setdefault(
            c.callee,
            {
                "callee": c.callee,
                "resolved": sym.qualname if sym else None,
                "signature": Signature(tuple(params[0])).render() if params else None,
                "shapes": set(),
            },
        )
        shape = f"{c.positional}" + "".join(f",{k}=" for k in sorted(c.keywords))
        shape += ",*" if c.star_args else ""
        shape += ",**" if c.star_kwargs else ""
        rec["shapes"].add(("bound:" if site.bound else "") + shape)
    call_list = [{**v, "shapes": sorted(v["shapes"])} for _, v in sorted(calls.items())]

    forks = []
    for state in fork_states(corpus, fork_inputs, index, index):
        d = state.decl
        defs = {}
        if state.base_text is not None:
            try:
                defs = {q: x.fingerprint for q, x in sorted(definitions(state.base_text).items())}
            except SyntaxError:
                defs = {}
        forks.append(
            {
                "file": d.plugin_relpath,
                "upstream": d.upstream_path,
                "version": d.version,
                "declared_by": d.origin,
                "upstream_definitions": defs,
            }
        )
    return {
        "schema": SCHEMA,
        "upstream": {"package": index.tree.package, "version": index.tree.version},
        "plugin": {"package": corpus.package, "patch_bases": sorted(corpus.patch_bases)},
        "patches": patches,
        "calls": call_list,
        "forks": sorted(forks, key=lambda f: f["file"]),
    }
