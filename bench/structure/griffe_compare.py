"""Time griffe against rebasekit's index on the upstream modules the bundled plugin reaches.

    pip install griffe   # not a rebasekit dependency; only this measurement needs it
    python bench/structure/griffe_compare.py [--trees 0.26.0 0.27.0]

The modules are those of the plugin's upstream imports and patch targets. griffe visits
each module file alone (its ``submodules=False`` unit, no alias resolution); rebasekit's index resolves
every imported name and patch target, parsing each module it needs once, with its
on-disk facts cache off (cold) and then on and filled (warm). Each tree is timed in a
fresh process state (new loader, new index).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import griffe

from rebasekit.corpus import extract_corpus
from rebasekit.corpus.locate import configured_patch_bases, default_plugin_dir
from rebasekit.index import CodeIndex, FactsCache
from rebasekit.upstream import open_tree


def reached(corpus) -> tuple[list[str], list[str]]:
    """(upstream module names, dotted names) the plugin imports or patches."""
    names = sorted(
        {i.target for i in corpus.imports} | {p.target for p in corpus.patches if p.target}
    )
    modules = sorted({i.module for i in corpus.imports})
    return modules, names


def module_file(root: Path, module: str) -> Path | None:
    base = root / module.replace(".", "/")
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def time_griffe(root: Path, modules: list[str]) -> tuple[float, int]:
    """griffe's static visit of each module file alone (what ``submodules=False`` loads
    for one module, without the parent packages a dotted ``load`` needs first)."""
    files = [(m, module_file(root, m)) for m in modules]
    start, loaded = time.perf_counter(), 0
    for module, path in files:
        if path is None:
            continue
        griffe.visit(module.rpartition(".")[2], filepath=path, code=path.read_text())
        loaded += 1
    return time.perf_counter() - start, loaded


def time_index(tree, names: list[str], cache: FactsCache) -> tuple[float, int, int]:
    index = CodeIndex(tree, cache)
    start = time.perf_counter()
    resolved = sum(index.resolve(name) is not None for name in names)
    return time.perf_counter() - start, resolved, index.parsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", default=["0.26.0", "0.27.0"])
    args = parser.parse_args()
    plugin = default_plugin_dir()
    corpus = extract_corpus(plugin, configured_patch_bases(plugin), "vllm")
    modules, names = reached(corpus)
    print(f"plugin {corpus.package}: {len(modules)} upstream modules, {len(names)} names")
    print("| tree | griffe, submodules=False | index, cold | index, warm cache |")
    print("|---|---:|---:|---:|")
    for spec in args.trees:
        tree = open_tree(spec, "vllm")
        root = Path(tree.root)
        g_time, g_loaded = time_griffe(root, modules)
        with tempfile.TemporaryDirectory() as tmp:
            cold, resolved, parsed = time_index(tree, names, FactsCache(None))
            time_index(tree, names, FactsCache(Path(tmp)))
            warm, _, warm_parsed = time_index(tree, names, FactsCache(Path(tmp)))
        print(
            f"| {spec} | {g_time:.2f} s ({g_loaded}/{len(modules)} modules) "
            f"| {cold:.2f} s ({resolved}/{len(names)} names, {parsed} modules parsed) "
            f"| {warm:.2f} s ({warm_parsed} parsed) |"
        )


if __name__ == "__main__":
    main()
