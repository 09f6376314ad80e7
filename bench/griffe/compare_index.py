"""griffe against rebasekit's own index, on the upstream names the bundled plugin reaches.

The question: can rebasekit drop its resolver (``rebasekit/index``) for griffe? Both
resolve the same dotted names (the plugin's vLLM imports, patch targets, patched members
and upstream calls, read from the corpus) in the same cached release trees, each from a
cold start (rebasekit with no facts cache, griffe with a fresh loader):

- ``rebasekit``: ``CodeIndex.lookup`` per name; parses only the modules a name needs.
- ``griffe-modules``: griffe's model loaded module by module on demand. griffe's public
  ``load("a.b.c", submodules=False)`` loads the *top-level package's* ``__init__`` only
  (its unit of loading is the package), so this uses the loader's per-module step
  (``GriffeLoader._load_module``) and follows aliases and base classes here, the way
  rebasekit's resolver does; it is the cheapest way to use griffe for this job.
- ``griffe-package`` (``--package``, slow): ``load("vllm", submodules=True)`` then
  ``resolve_aliases``, griffe's supported mode; timed once per tree.

Timings alternate between the tools, ``--repeat`` times each, in one process; the
report gives median (min-max) and what each tool concluded per name, with every
disagreement listed. griffe is not a rebasekit dependency: install it to run this.

Usage: python bench/griffe/compare_index.py [--trees 0.26.0,0.27.0] [--repeat 5] [--package]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from pathlib import Path

import griffe

from rebasekit.index import CodeIndex
from rebasekit.index.cache import FactsCache
from rebasekit.scan import load_corpus
from rebasekit.upstream import open_tree

_MAX_DEPTH = 40


def reached_names() -> list[str]:
    """Every dotted vLLM name the bundled plugin's corpus refers to."""
    corpus = load_corpus()
    names: set[str] = set()
    for imp in corpus.imports:
        if imp.module.split(".")[0] == "vllm":
            names.add(f"{imp.module}.{imp.name}" if imp.name and imp.name != "*" else imp.module)
    for patch in corpus.patches:
        if patch.target:
            names.add(patch.target)
            names.update(f"{patch.target}.{attr.name}" for attr in patch.attributes)
    names.update(call.callee for call in corpus.calls if call.callee.startswith("vllm."))
    return sorted(names)


# ----------------------------------------------------------------------------- rebasekit
def rebasekit_run(version: str, names: list[str]) -> tuple[float, dict[str, str], int]:
    start = time.perf_counter()
    index = CodeIndex(open_tree(version), cache=FactsCache(None))
    verdicts = {}
    for name in names:
        res = index.lookup(name)
        verdicts[name] = res.symbol.kind if res.found and res.symbol else res.status.value
    return time.perf_counter() - start, verdicts, index.parsed


# ------------------------------------------------------------------------ griffe, modules
class GriffeOnDemand:
    """griffe's per-module loading, with aliases and bases followed on demand."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.loader = griffe.GriffeLoader(search_paths=[str(root)])
        self.modules: dict[str, object | None] = {}
        self.failed: dict[str, str] = {}  # module -> why griffe could not load it

    def _file(self, modname: str) -> Path | None:
        base = self.root / modname.replace(".", "/")
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    def module(self, modname: str):
        if modname in self.modules:
            return self.modules[modname]
        path = self._file(modname)
        parent_name, _, short = modname.rpartition(".")
        parent = self.module(parent_name) if parent_name else None
        module = None
        if path is not None and (parent is not None or not parent_name):
            try:
                module = self.loader._load_module(short, path, submodules=False, parent=parent)
            except Exception as exc:  # a module griffe cannot visit counts as unresolved
                self.failed[modname] = f"{type(exc).__name__}: {str(exc)[:80]}"
                module = None
            if module is not None:
                if parent is not None:
                    parent.set_member(short, module)
                else:
                    self.loader.modules_collection.set_member(short, module)
                self.modules[modname] = module  # before the wildcards: they may import it back
                for imported in list(module.members.values()):
                    if imported.is_alias and imported.wildcard:  # expansion needs the target
                        self.module(imported.wildcard)
                self.loader.expand_exports(module)
                self.loader.expand_wildcards(module, external=False)
        self.modules[modname] = module
        return module

    def resolve(self, dotted: str, depth: int = 0):
        if depth > _MAX_DEPTH:
            return None
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            if self._file(".".join(parts[:cut])) is not None:
                break
        else:
            return None
        obj = self.module(".".join(parts[:cut]))
        for part in parts[cut:]:
            obj = self.member(obj, part, depth)
            if obj is None:
                return None
        return self.final(obj, depth)

    def final(self, obj, depth: int):
        while obj is not None and obj.is_alias:
            if depth > _MAX_DEPTH:
                return None
            depth += 1
            obj = self.resolve(obj.target_path, depth)
        return obj

    def member(self, obj, name: str, depth: int):
        obj = self.final(obj, depth)
        if obj is None:
            return None
        found = obj.members.get(name)
        if found is not None:
            return found
        if obj.is_module:
            return self.module(f"{obj.path}.{name}") if self._file(f"{obj.path}.{name}") else None
        if obj.is_class:
            for base in obj.bases:
                path = getattr(base, "canonical_path", None) or str(base)
                cls = self.resolve(path, depth + 1)
                if cls is not None and cls.is_class:
                    inherited = self.member(cls, name, depth + 1)
                    if inherited is not None:
                        return inherited
        return None


def griffe_kind(obj) -> str:
    if obj is None:
        return "not found"
    return {"attribute": "variable"}.get(obj.kind.value, obj.kind.value)


def griffe_modules_run(version: str, names: list[str]):
    start = time.perf_counter()
    tool = GriffeOnDemand(Path(open_tree(version).root))
    verdicts = {name: griffe_kind(tool.resolve(name)) for name in names}
    loaded = sum(1 for m in tool.modules.values() if m is not None)
    return time.perf_counter() - start, verdicts, loaded, tool.failed


def griffe_package_run(version: str, names: list[str]) -> tuple[float, dict[str, str]]:
    start = time.perf_counter()
    loader = griffe.GriffeLoader(search_paths=[str(open_tree(version).root)])
    loader.load("vllm", submodules=True)
    loader.resolve_aliases(implicit=False, external=False)
    elapsed = time.perf_counter() - start
    verdicts = {}
    for name in names:
        try:
            obj = loader.modules_collection.get_member(name)
            obj = obj.final_target if obj.is_alias else obj
        except Exception:  # missing member or unresolvable alias
            obj = None
        verdicts[name] = griffe_kind(obj)
    return elapsed, verdicts


# -------------------------------------------------------------------------------- report
def _stat(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s ({min(values):.3f}-{max(values):.3f})"


def agree(ours: str, theirs: str) -> bool:
    """Whether both tools reach the same conclusion on a name's existence."""
    if ours in ("missing", "module-missing"):
        return theirs == "not found"
    if ours == "dynamic":
        return False  # griffe has no "cannot tell": every dynamic name is a disagreement
    return theirs != "not found"  # found by both (the kind may differ: listed apart)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", default="0.26.0,0.27.0")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--package", action="store_true", help="also time griffe-package once")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # griffe logs every unresolvable annotation
    names = reached_names()
    print(f"{len(names)} names reached by the bundled plugin")
    for version in args.trees.split(","):
        open_tree(version)  # download outside the timings
        times: dict[str, list[float]] = {"rebasekit": [], "griffe-modules": []}
        for _ in range(args.repeat):
            t, ours, parsed = rebasekit_run(version, names)
            times["rebasekit"].append(t)
            t, theirs, loaded, failed = griffe_modules_run(version, names)
            times["griffe-modules"].append(t)
        print(f"\n## vllm {version}")
        print(f"rebasekit      {_stat(times['rebasekit'])}, {parsed} modules parsed")
        print(f"griffe-modules {_stat(times['griffe-modules'])}, {loaded} modules loaded")
        for modname, why in sorted(failed.items()):
            print(f"  griffe could not load {modname}: {why}")
        print(
            f"ratio griffe-modules / rebasekit: {statistics.median(times['griffe-modules']) / statistics.median(times['rebasekit']):.2f}"
        )
        tally: dict[str, int] = {}
        for name in names:
            tally[ours[name]] = tally.get(ours[name], 0) + 1
        print("rebasekit verdicts:", ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
        tally = {}
        for name in names:
            tally[theirs[name]] = tally.get(theirs[name], 0) + 1
        print("griffe verdicts:   ", ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
        differ = [n for n in names if not agree(ours[n], theirs[n])]
        print(f"disagreements on existence: {len(differ)} of {len(names)}")
        for name in differ:
            print(f"  {name}: rebasekit {ours[name]}, griffe {theirs[name]}")
        kinds = [
            n
            for n in names
            if theirs[n] != "not found" and agree(ours[n], theirs[n]) and ours[n] != theirs[n]
        ]
        print(f"found by both, another kind: {len(kinds)}")
        for name in kinds:
            print(f"  {name}: rebasekit {ours[name]}, griffe {theirs[name]}")
        if args.package:
            t, whole = griffe_package_run(version, names)
            differ = [n for n in names if not agree(ours[n], whole[n])]
            print(
                f"griffe-package {t:.1f} s (one run); disagreements with rebasekit: {len(differ)}"
            )
            for name in differ:
                print(f"  {name}: rebasekit {ours[name]}, griffe-package {whole[name]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
