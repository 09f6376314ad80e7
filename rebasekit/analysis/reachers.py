"""Can any upstream call reach a replaced callable with the signature it no longer has?

A replacement whose parameters differ from upstream's breaks only at the upstream call
sites that reach it. When every such call sits inside a function the plugin also
replaces (so it never runs), or binds to the replacement exactly as it binds upstream
(same parameters filled, none missing or unexpected), the difference cannot fail: the
plugin changed the signature on purpose together with its callers. So does a call in
upstream code that never runs at all (:mod:`rebasekit.analysis.deadcode`). The search
covers every file of the tree that spells ``name(``; a call through ``*args``/``**kwargs``
is undecidable and counts as reaching.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rebasekit.analysis.binding import CallShape, bind
from rebasekit.analysis.deadcode import never_runs
from rebasekit.analysis.upstreamuses import UpstreamUse, _file_calls
from rebasekit.corpus.models import PluginCorpus
from rebasekit.index import CodeIndex
from rebasekit.index.cache import tree_memo
from rebasekit.index.models import ParamKind, Signature

# ``name(`` read backwards: ``(``, blanks, then the name reversed (a full word). A search
# that starts at a literal ``(`` skips ahead at the speed of a byte scan; the forward form
# (``\b([A-Za-z_]\w*)\s*\(``, the same names) tries a match at every character, twelve
# times slower over a whole tree.
_CALLED_BACKWARDS = re.compile(r"\(\s*(\w+)")
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_POSITIONAL = (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)


@tree_memo
def _files_calling(index: CodeIndex) -> tuple[list[str], dict[str, list[int]]]:
    """Every name written as ``name(`` in the tree, with the files that write it.

    The files are numbers into the list that comes first: a release tree has about
    100,000 name-file pairs, and with numbers for paths the stored table is a fifth of
    the size and a warm scan loads it about four times faster.
    """
    files: list[str] = []
    out: dict[str, list[int]] = {}
    for relpath in index.tree.iter_py_files():
        names = called_names(index.tree.read_text(relpath))
        if names:
            files.append(relpath)
            for name in names:
                out.setdefault(name, []).append(len(files) - 1)
    return files, out


def called_names(text: str) -> list[str]:
    r"""Every name written as ``name(`` (blanks allowed before the parenthesis), sorted.

    The name is a whole word starting with an ASCII letter or ``_``: exactly what
    ``re.findall(r"\b([A-Za-z_]\w*)\s*\(", text)`` finds, without its cost.
    """
    words = set(_CALLED_BACKWARDS.findall(text[::-1]))
    return sorted(w[::-1] for w in words if w[-1] in _NAME_START)


def upstream_calls(index: CodeIndex, name: str) -> list[UpstreamUse]:
    """Every upstream call ``<anything>.name(...)`` or ``name(...)`` in the tree."""
    found: list[UpstreamUse] = []
    files, calling = _files_calling(index)
    for number in calling.get(name, []):
        found += _file_calls(index, files[number]).get(name, [])
    return found


def replaced_functions(index: CodeIndex, corpus: PluginCorpus) -> tuple[set[str], set[str]]:
    """Dotted upstream names (where defined) of every function or method the plugin replaces.

    The second set adds, for a method replaced on a class, the same method of each of the
    class's in-tree bases: a ``self.m(...)`` call there runs on an instance of the patched
    class only through that base method, which the replacement now shadows.
    """
    memo: dict = index.__dict__.setdefault("_replaced_functions", {})
    if id(corpus) in memo:
        return memo[id(corpus)]
    direct: set[str] = set()
    shadowed: set[str] = set()
    for patch in corpus.patches:
        if not patch.target:
            continue
        sym = index.resolve(patch.target)
        target = sym.qualname if sym is not None else patch.target
        bases = index.mro(sym) if sym is not None and sym.kind == "class" else []
        for attr in patch.attributes:
            if attr.kind in ("method", "staticmethod", "classmethod", "property"):
                direct.add(f"{target}.{attr.name}")
                shadowed.update(f"{k.qualname}.{attr.name}" for k in bases)
    memo[id(corpus)] = (direct, shadowed | direct)
    return memo[id(corpus)]


def _modname(relpath: str) -> str:
    mod = relpath[:-3] if relpath.endswith(".py") else relpath
    mod = mod.replace("/", ".")
    return mod[: -len(".__init__")] if mod.endswith(".__init__") else mod


def in_replaced(index: CodeIndex, corpus: PluginCorpus, use: UpstreamUse) -> str | None:
    """The dotted upstream caller of ``use`` when the plugin replaces it (or an enclosing def)."""
    if not use.caller:
        return None
    caller = f"{_modname(use.relpath)}.{use.caller}"
    direct, shadowed = replaced_functions(index, corpus)
    replaced = shadowed if use.receiver == "self" else direct
    parts = caller.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in replaced:
            return caller
    return None


def same_binding(shape: CallShape, ours: Signature, theirs: Signature) -> bool:
    """The call binds to ``ours`` without error, each argument in the parameter it fills upstream.

    A positional argument may land in a renamed parameter (its name on neither side).
    """
    if shape.star_args or shape.star_kwargs:
        return False
    if bind(shape, ours).problems or bind(shape, theirs).problems:
        return False
    mine = [p.name for p in ours.params if p.kind in _POSITIONAL][: shape.positional]
    up = [p.name for p in theirs.params if p.kind in _POSITIONAL][: shape.positional]
    our_names = {p.name for p in ours.params}
    their_names = {p.name for p in theirs.params}
    # the same slot, or a renamed one (neither name on the other side): same meaning
    return all(a == b or (a not in their_names and b not in our_names) for a, b in zip(mine, up))


def _may_name(index: CodeIndex, use: UpstreamUse, name: str, target: str | None) -> bool:
    """Whether ``use`` may call ``target.name`` (unresolvable: yes, to stay safe).

    ``self.name(...)`` is a method call when the caller's class defines ``name`` (else
    it may be an instance attribute holding the function); ``self.x.name(...)`` calls a
    method of an object, not a module's function.
    """
    module = _modname(use.relpath)
    if use.receiver is not None and use.receiver.split(".", 1)[0] in ("self", "cls"):
        if use.receiver not in ("self", "cls"):
            return False
        owner = index.resolve(f"{module}.{use.caller.rsplit('.', 1)[0]}") if use.caller else None
        if owner is not None and owner.kind == "class":
            member = index.lookup_member(owner, name)
            return member is None or member.kind != "function"
        return True
    if target is None:
        return True
    if use.receiver is None:
        if module == target:
            return True  # a global looked up at call time: the replacement
        spelled, want = f"{module}.{name}", f"{target}.{name}"
    else:
        spelled, want = f"{module}.{use.receiver}", target
    sym, wanted = index.resolve(spelled), index.resolve(want)
    if sym is None or wanted is None:
        return True
    # ``from target import name`` binds whatever target held at import: maybe the replacement
    return sym.qualname == wanted.qualname or spelled == want


@dataclass(frozen=True)
class Reach:
    """The upstream call sites of one replaced callable, split by whether they can fail."""

    sites: int
    inside_replaced: tuple[str, ...]  # callers (dotted) the plugin replaces too
    binding: tuple[str, ...]  # call sites (relpath:line) that bind to the replacement alike
    dead: tuple[str, ...] = ()  # why each remaining call site never runs

    @property
    def harmless(self) -> bool:
        judged = len(self.inside_replaced) + len(self.binding) + len(self.dead)
        return self.sites > 0 and self.sites == judged

    def describe(self) -> str:
        parts = []
        if self.inside_replaced:
            names = ", ".join(sorted(set(self.inside_replaced)))
            parts.append(
                f"called upstream only from {names}, which the plugin also replaces (or shadows on the patched class)"
            )
        if self.binding:
            parts.append(
                f"{len(self.binding)} upstream call site(s) bind to the replacement unchanged "
                f"({', '.join(self.binding[:3])})"
            )
        if self.dead:
            parts.append(
                f"{len(self.dead)} upstream call site(s) never run ({'; '.join(dict.fromkeys(self.dead))})"
            )
        return "; ".join(parts)


def reach(
    index: CodeIndex,
    corpus: PluginCorpus,
    name: str,
    ours: Signature,
    theirs: Signature,
    *,
    bound: bool,
    module_function: bool = False,
    target: str | None = None,
) -> Reach:
    """How upstream's calls of ``name`` meet a replacement taking ``ours`` instead of ``theirs``.

    ``bound``: the signatures have no receiver, and bare ``name(...)`` calls cannot be
    judged, so they count as reaching. ``module_function``: the replaced callable is a
    module attribute of ``target`` (dotted, where defined): ``self.name(...)`` never
    reaches it, nor a call whose name or receiver the caller's module binds to something
    else; a name that does not resolve counts as reaching.
    """
    inside: list[str] = []
    binding: list[str] = []
    dead: list[str] = []
    uses = upstream_calls(index, name)
    if module_function:
        uses = [u for u in uses if _may_name(index, u, name, target)]
    for use in uses:
        caller = in_replaced(index, corpus, use)
        if caller is not None:
            inside.append(caller)
        elif (not bound or use.receiver is not None) and same_binding(use.shape, ours, theirs):
            binding.append(f"{use.relpath}:{use.line}")
        else:
            why = (
                never_runs(
                    index, corpus, use.relpath, use.caller, replaced_functions(index, corpus)[0]
                )
                if use.caller
                else None
            )
            if why is not None:
                dead.append(f"{use.relpath}:{use.line}: {why}")
    return Reach(len(uses), tuple(inside), tuple(binding), tuple(dead))
