"""What extraction found in one plugin file, kept on disk and keyed by the file's bytes.

Reading a 20k-line plugin (tokenizing for comments, walking every call) costs more than
all checks of a warm scan; an unchanged file gives the same records every time, so they
are stored per file. The key is the file's path and SHA-256, the patch bases, the
upstream package name and the digest of rebasekit's own sources: any change to any of
them, or to the extractor, is a miss. Entries live in the checked data-only store of the
index cache (JSON, schema, key and payload hash verified on read; never pickle), so a
tampered or foreign entry is also just a miss.

This is sound only while :func:`rebasekit.corpus.extract.extract_file` reads nothing but
the file and those settings; anything that looks across files runs after extraction.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from rebasekit.corpus.models import (
    PatchClass,
    PluginCorpus,
    PluginFile,
    PluginImport,
    UpstreamCall,
)
from rebasekit.datacodec import record
from rebasekit.index.cache import DataStore, code_digest
from rebasekit.paths import index_dir
from rebasekit.sourcefile import SourceText

FORMAT = 1  # bump when FileExtract changes shape


@record
@dataclass
class FileExtract:
    """The records one file added to the corpus (``comments`` is None when it did not parse)."""

    file: PluginFile
    patches: list[PatchClass]
    imports: list[PluginImport]
    calls: list[UpstreamCall]
    comments: dict[int, str] | None


def default_store() -> DataStore:
    """The store next to the parsed-module facts (same cache folder, same trust rules)."""
    return DataStore(index_dir() / f"corpus-v{FORMAT}")


def entry_key(corpus: PluginCorpus, relpath: str, source: bytes) -> str:
    """Everything the extraction of one file depends on, hashed."""
    parts = (
        FORMAT,
        relpath,
        hashlib.sha256(source).hexdigest(),
        corpus.patch_bases,
        corpus.upstream_package,
        code_digest(),
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def load(store: DataStore, corpus: PluginCorpus, relpath: str, source: bytes) -> bool:
    """Add the stored records of ``relpath`` to ``corpus``; False (nothing added) on a miss.

    The syntax tree is not stored: :meth:`PluginCorpus.module` parses the text on first use.
    """
    hit = store.load(entry_key(corpus, relpath, source))
    if not isinstance(hit, FileExtract) or hit.file.relpath != relpath:
        return False
    corpus.sources[relpath] = SourceText.from_bytes(source).text
    corpus.files.append(hit.file)
    corpus.patches.extend(hit.patches)
    corpus.imports.extend(hit.imports)
    corpus.calls.extend(hit.calls)
    if hit.comments is not None:
        corpus.comments[relpath] = hit.comments
    return True


def save(
    store: DataStore,
    corpus: PluginCorpus,
    relpath: str,
    source: bytes,
    before: tuple[int, int, int, int],
) -> None:
    """Store what extraction of ``relpath`` added to ``corpus`` since the lengths ``before``."""
    n_files, n_patches, n_imports, n_calls = before
    if len(corpus.files) != n_files + 1:
        return  # not one file's worth of records: nothing sound to store
    value = FileExtract(
        corpus.files[n_files],
        corpus.patches[n_patches:],
        corpus.imports[n_imports:],
        corpus.calls[n_calls:],
        corpus.comments.get(relpath) if corpus.files[n_files].syntax_error is None else None,
    )
    store.save(entry_key(corpus, relpath, source), value)


def sizes(corpus: PluginCorpus) -> tuple[int, int, int, int]:
    """The lengths :func:`save` compares against."""
    return len(corpus.files), len(corpus.patches), len(corpus.imports), len(corpus.calls)
