"""Gather every :class:`Degradation` of one analysis, so none is reported clean.

Loaders record what they skipped on their own objects (a ``degradations`` list on trees,
indexes and the corpus); this module adds what only the whole picture shows (upstream
modules the checks needed but could not parse, patch bases that match no class) and
returns one de-duplicated list for the report and the exit code.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rebasekit.corpus.models import RULE_CONFIGURED, RULES, PluginCorpus
from rebasekit.degradation import Degradation


def recorded(*objects: Any) -> list[Degradation]:
    """The ``degradations`` lists the loaders left on ``objects`` (None entries ignored)."""
    out: list[Degradation] = []
    for obj in objects:
        out += list(getattr(obj, "degradations", None) or [])
    return out


def unparsed_modules(index: Any) -> list[Degradation]:
    """Upstream modules the analysis looked at that do not parse: their facts are unknown.

    Modules a loader already reported (a file it skipped) are not reported twice.
    """
    known = {d.subject for d in recorded(index, getattr(index, "tree", None))}
    out = []
    for facts in getattr(index, "_modules", {}).values():
        subject = f"{index.tree.label}: {facts.relpath}" if facts is not None else ""
        if facts is not None and facts.syntax_error and subject not in known:
            out.append(
                Degradation(
                    "file-unparsed",
                    subject,
                    f"does not parse ({facts.syntax_error}); its definitions were not checked",
                    "fix the file, or report the syntax rebasekit cannot read",
                )
            )
    return out


def patch_base_problems(corpus: PluginCorpus) -> list[Degradation]:
    """A plugin that imports upstream but yields no patch was not analysed.

    So is one whose configured patch bases match no class, even if other rules found
    patches: the configuration says there are patch classes the scan did not see.
    """
    subject = str(corpus.root / corpus.package)
    configured = [p for p in corpus.patches if p.rule == RULE_CONFIGURED]
    if corpus.patch_bases and not configured and corpus.imports:
        return [
            Degradation(
                "patch-bases-unmatched",
                subject,
                f"patch base(s) {', '.join(corpus.patch_bases)} match no class, so no patch was found",
                "pass the plugin's patch marker class with --patch-base NAME "
                "(or fix patch-bases in [tool.rebasekit])",
            )
        ]
    if corpus.patches or not corpus.imports:
        return []
    likely = corpus.base_candidates
    named = f"; likely patch bases: {', '.join(likely)}" if likely else ""
    example = likely[0] if likely else "NAME"
    return [
        Degradation(
            "no-patches-found",
            subject,
            f"the plugin imports {corpus.upstream_package} but no patch was found by any rule "
            f"({', '.join(RULES[1:])}){named}",
            f"pass its patch marker class with --patch-base {example} "
            "(or set patch-bases in [tool.rebasekit])",
        )
    ]


def unique(items: Iterable[Degradation]) -> list[Degradation]:
    return list(dict.fromkeys(items))


def of_inputs(corpus: PluginCorpus | None = None, indexes: Iterable[Any] = ()) -> list[Degradation]:
    """Everything the loaders and parsers of ``corpus`` and ``indexes`` could not read.

    Call it after the analysis ran: upstream modules are parsed lazily, only when needed.
    """
    indexes = [i for i in indexes if i is not None]
    found = recorded(corpus, *[i.tree for i in indexes], *indexes)
    if corpus is not None:
        found += patch_base_problems(corpus)
    for index in indexes:
        found += unparsed_modules(index)
    return unique(found)
