"""A whole-plugin cache of the extracted corpus, keyed by everything extraction reads.

Patch discovery looks across files (a base defined in one file, the functions another
file assigns, registries, platform entry points), so what one file yields is not a
function of that file alone; the cache entry is therefore the whole corpus, and its key
covers every plugin file (relative path and SHA-256 of its bytes, the same list
extraction reads), the patch bases, the upstream package, the platform entry points, the
sub-package pins, the interpreter's minor version (its parser) and the digest of
rebasekit's own sources. Entries live in the checked, data-only :class:`DataStore`; a
missing, stale or tampered entry is extracted afresh and stored again.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable
from pathlib import Path

from rebasekit.corpus.extract import extract_corpus, read_plugin
from rebasekit.corpus.models import PluginCorpus
from rebasekit.index.cache import DataStore, code_digest
from rebasekit.sourcefile import SkippedFile

FORMAT = 1  # bump when the stored shape of a corpus changes


def corpus_key(
    plugin_dir: Path,
    files: list[tuple[str, bytes | SkippedFile]],
    patch_bases: tuple[str, ...],
    upstream_package: str,
    platform_functions: tuple[str, ...],
    subpackage_pins: dict[str, str],
) -> str:
    """The digest of every input of extraction (see the module docstring)."""
    digest = hashlib.sha256()
    parts = (
        FORMAT,
        str(plugin_dir.resolve()),
        tuple((relpath, hashlib.sha256(data).hexdigest()) for relpath, data in files),
        patch_bases,
        upstream_package,
        platform_functions,
        tuple(sorted(subpackage_pins.items())),
        sys.version_info[:2],
        code_digest(),
    )
    digest.update(repr(parts).encode())
    return digest.hexdigest()


def cached_corpus(
    store: DataStore,
    plugin_dir: Path,
    patch_bases: Iterable[str],
    upstream_package: str,
    platform_functions: Iterable[str],
    subpackage_pins: dict[str, str],
) -> PluginCorpus:
    """The plugin's corpus from ``store`` when every input is unchanged, else extracted.

    A plugin with a file that cannot be read is extracted every time (its degradation
    depends on more than the bytes) and not stored.
    """
    bases, functions = tuple(patch_bases), tuple(platform_functions)
    files = read_plugin(plugin_dir)
    if any(isinstance(data, SkippedFile) for _, data in files):
        corpus = extract_corpus(plugin_dir, bases, upstream_package, functions, files)
        corpus.subpackage_pins = dict(subpackage_pins)
        return corpus
    key = corpus_key(
        plugin_dir,
        files,  # type: ignore[arg-type]
        bases,
        upstream_package,
        functions,
        subpackage_pins,
    )
    data = store.load(key)
    if isinstance(data, dict):
        try:
            return PluginCorpus.from_data(data)
        except (TypeError, KeyError, ValueError):
            pass  # well-formed JSON of some other shape: extracted again below
    corpus = extract_corpus(plugin_dir, bases, upstream_package, functions, files)
    corpus.subpackage_pins = dict(subpackage_pins)
    store.save(key, corpus.to_data())
    return corpus
