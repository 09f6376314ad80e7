"""Sub-packages that declare their own upstream pin are not scanned against another one.

A plugin may ship a part built for an older release (its own extra pins it, say
``embedding = ["vllm==0.9.2"]`` beside the main ``vllm = ["vllm==0.10.1"]``). Checking that
part against the main pin reports drift it never had to follow; checking it nowhere and
saying nothing would pass it off as clean. So a scan at another release leaves it out of
the main pass (:func:`for_release`, which records a degradation naming the scan that covers
it) and the scan then checks it on its own (:func:`only`) against the tree of its own pin;
only when that tree cannot be opened does the degradation stay and the analysis remain
incomplete.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.version import InvalidVersion, Version

from rebasekit.corpus.models import PluginCorpus
from rebasekit.degradation import Degradation


def _same(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def other_pins(corpus: PluginCorpus, version: str | None) -> dict[str, str]:
    """Sub-package prefix -> its own pin, for every sub-package pinned to another release."""
    if version is None:
        return {}
    return {p: pin for p, pin in corpus.subpackage_pins.items() if not _same(pin, version)}


def _keep(corpus: PluginCorpus, kept) -> PluginCorpus:
    return replace(
        corpus,
        patches=[p for p in corpus.patches if kept(p.relpath)],
        imports=[i for i in corpus.imports if kept(i.relpath)],
        calls=[c for c in corpus.calls if kept(c.relpath)],
        comments={r: c for r, c in corpus.comments.items() if kept(r)},
    )


def only(corpus: PluginCorpus, prefix: str) -> PluginCorpus:
    """The part of ``corpus`` under the sub-package ``prefix``, pinned as it declares."""
    narrowed = _keep(corpus, lambda relpath: relpath.startswith(prefix))
    return replace(narrowed, subpackage_pins={prefix: corpus.subpackage_pins[prefix]})


def for_release(
    corpus: PluginCorpus, version: str | None
) -> tuple[PluginCorpus, list[Degradation]]:
    """The corpus without sub-packages pinned to another release, and one note for each."""
    other = other_pins(corpus, version)
    if not other:
        return corpus, []

    def kept(relpath: str) -> bool:
        return not any(relpath.startswith(prefix) for prefix in other)

    notes = [
        Degradation(
            "subpackage-other-pin",
            prefix.rstrip("/"),
            f"declares its own pin {corpus.upstream_package}=={pin} (extra "
            f"'{prefix.rstrip('/').rsplit('/', 1)[-1]}'), so it was not scanned against {version}",
            f"give its tree (--pin-tree {pin}=DIR) or let rebasekit fetch vLLM {pin}, "
            "or pass --allow-incomplete",
        )
        for prefix, pin in sorted(other.items())
    ]
    return _keep(corpus, kept), notes
