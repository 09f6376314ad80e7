"""The versioned patch corpus: every upstream surface the plugin binds to, at one pin.

``rebasekit corpus lock`` writes it (``rebasekit.lock.json`` next to the plugin
project's ``pyproject.toml``); ``corpus verify`` recomputes it and fails on any
difference, so a stale lock — the pin moved, or plugin code changed what it touches —
cannot go unnoticed. The lock also names the *base* tree for drift when no ``--from`` is
given: its ``upstream.version`` is the pin the plugin was last verified against
(:func:`rebasekit.load.lock_base` opens it).

The file is deterministic (sorted keys and lists, no line numbers, no timestamps) so
that it diffs cleanly in review. ``SCHEMA`` is bumped whenever its shape changes.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from rebasekit.corpus.locate import find_pyproject
from rebasekit.corpus.models import PluginCorpus
from rebasekit.errors import InputError

LOCK_NAME = "rebasekit.lock.json"
SCHEMA = 1


def project_root(corpus: PluginCorpus) -> Path:
    """The plugin project's folder: where its ``pyproject.toml`` is (else the corpus root)."""
    pyproject = find_pyproject(corpus.root / corpus.package)
    return pyproject.parent if pyproject is not None else corpus.root


def default_lock_path(corpus: PluginCorpus) -> Path:
    return project_root(corpus) / LOCK_NAME


# ------------------------------------------------------------------------------ build


def build_lock(corpus: PluginCorpus, index: Any, fork_inputs: Any) -> dict[str, Any]:
    """The lock document for ``corpus`` against the tree of ``index`` (a CodeIndex).

    ``fork_inputs`` (:class:`~rebasekit.analysis.forkdecl.ForkInputs`) holds the declared forks
    and their recorded trees, opened by the caller (:func:`rebasekit.load.load_forks`).
    """
    from rebasekit.analysis.attrs import attribute_uses, provision
    from rebasekit.analysis.bodies import similarity
    from rebasekit.analysis.callsites import call_sites
    from rebasekit.analysis.defnodes import call_params
    from rebasekit.analysis.forkstate import fork_states
    from rebasekit.analysis.overrides import (
        MIRROR_THRESHOLD,
        override_member,
        overrides,
        symbol_definition,
    )
    from rebasekit.index.models import Signature

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
            from rebasekit.analysis.bodies import definitions

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


def dumps(lock: dict[str, Any]) -> str:
    return json.dumps(lock, indent=2, sort_keys=True) + "\n"


def read_lock(path: Path) -> dict[str, Any]:
    """Load a lock file; bad or foreign files are input errors (exit 2)."""
    regenerate = "regenerate it with `rebasekit corpus lock`"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(
            f"no lock file at {path}", hint="create it with `rebasekit corpus lock`"
        ) from exc
    except (OSError, ValueError) as exc:  # ValueError: bad JSON or not UTF-8
        raise InputError(
            f"{path} is not a readable rebasekit lock ({exc})", hint=regenerate
        ) from exc
    if not isinstance(data, dict) or "schema" not in data or "upstream" not in data:
        raise InputError(f"{path} is not a rebasekit lock file", hint=regenerate)
    if data["schema"] != SCHEMA:
        raise InputError(
            f"{path} uses lock schema {data['schema']!r}, this rebasekit writes {SCHEMA}",
            hint=regenerate,
        )
    upstream = data["upstream"]
    if (
        not isinstance(upstream, dict)
        or not isinstance(upstream.get("version"), str)
        or not upstream["version"]
    ):
        raise InputError(
            f'{path} records no upstream pin ("upstream": {{"version": "X.Y.Z"}})', hint=regenerate
        )
    return data


def lock_diff(recorded: dict[str, Any], current: dict[str, Any], label: str = "lock") -> str:
    """Unified diff of two lock documents ('' when equal)."""
    return "".join(
        difflib.unified_diff(
            dumps(recorded).splitlines(keepends=True),
            dumps(current).splitlines(keepends=True),
            fromfile=f"{label} (recorded)",
            tofile=f"{label} (current)",
        )
    )


def lock_version(corpus: PluginCorpus) -> str | None:
    """The pin recorded in the project's lock file; None without a lock file.

    Raises :class:`InputError` for a lock that exists but cannot be used.
    """
    path = default_lock_path(corpus)
    if not path.exists():
        return None
    return read_lock(path)["upstream"]["version"]
