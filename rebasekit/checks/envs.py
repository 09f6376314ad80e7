"""RK308: ``vllm.envs`` attributes the plugin reads that the tree no longer defines."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from rebasekit.analysis.envreads import defined_names, env_reads
from rebasekit.checks.registry import register_check
from rebasekit.context import ScanContext
from rebasekit.findings import Finding, Location
from rebasekit.records import EnvsAttributeMissing


@register_check(codes=["RK308"])
def check_envs(ctx: ScanContext) -> Iterator[Finding]:
    package = ctx.config.upstream_package
    reads, own = env_reads(ctx.corpus, package)
    if not reads:
        return
    defined = defined_names(ctx.new, package)
    if defined is None:
        return  # no envs module at all: the import checks report that
    old_defined = defined_names(ctx.old, package) if ctx.old is not None else None
    facts = ctx.new.module(f"{package}.envs")
    seen: set[tuple[str, int, str]] = set()
    for read in reads:
        if read.name in defined or read.name in own or read.name.startswith("__"):
            continue
        key = (read.relpath, read.line, read.name)
        if key in seen:
            continue
        seen.add(key)
        close = difflib.get_close_matches(read.name, sorted(defined), n=1, cutoff=0.8)
        tree = ctx.new.tree.version or ctx.new.tree.label
        was = old_defined is not None and read.name in old_defined
        record = EnvsAttributeMissing(
            read.name,
            tree=tree,
            read_as=read.text,
            old_tree=(ctx.old.tree.version or ctx.old.tree.label) if was and ctx.old else None,
            similar=close[0] if close else None,
        )
        yield ctx.report(
            record,
            plugin=ctx.plugin_loc(read.relpath, read.line, read.in_function),
            upstream=Location(facts.relpath, None, None, f"{package}.envs") if facts else None,
            suggestion=(
                f"read {close[0]} instead"
                if close
                else "read the environment variable with os.environ, or drop the read"
            ),
        )
