"""The patch corpus of a plugin: patch classes, their targets, upstream imports and calls."""

from rebasekit.corpus.extract import ORIG_PREFIX, extract_corpus
from rebasekit.corpus.locate import (
    check_plugin_dir,
    configured_patch_bases,
    declared_subpackage_pins,
    default_plugin_dir,
    platform_entry_points,
)
from rebasekit.corpus.models import (
    OrigAlias,
    PatchAttr,
    PatchClass,
    PluginCorpus,
    PluginFile,
    PluginImport,
    SelfRead,
    UpstreamCall,
)

__all__ = [
    "ORIG_PREFIX",
    "OrigAlias",
    "PatchAttr",
    "PatchClass",
    "PluginCorpus",
    "PluginFile",
    "PluginImport",
    "SelfRead",
    "UpstreamCall",
    "check_plugin_dir",
    "configured_patch_bases",
    "declared_subpackage_pins",
    "default_plugin_dir",
    "extract_corpus",
    "platform_entry_points",
]
