"""Suffix decoding: a native suffix-tree cache that drafts speculative tokens.

vLLM's built-in ``method="suffix"`` proposer imports ``SuffixDecodingCache``
from here, so installing this package next to vLLM is all it needs.
"""

from arctic_inference.suffix_decoding.cache import SlipRecovery, SuffixDecodingCache
from arctic_inference.suffix_decoding.draft import SuffixDecodingDraft
from arctic_inference.suffix_decoding.policy import CostAwarePolicy, LoadAwareBackoff, NeverDraft

__all__ = [
    "SlipRecovery",
    "SuffixDecodingCache",
    "SuffixDecodingDraft",
    "CostAwarePolicy",
    "LoadAwareBackoff",
    "NeverDraft",
]
