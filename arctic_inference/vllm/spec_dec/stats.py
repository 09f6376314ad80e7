"""Per-position acceptance rates that stay right when draft lengths vary.

vLLM 0.26.0's ``SpecDecodingLogging`` divides the tokens accepted at each
draft position by the number of drafts. With one fixed draft length that is
the acceptance rate of the position; with varying lengths (suffix decoding,
the hybrid: a 3-token speculator draft next to an 8-token suffix draft) a
position is only drafted by the longer drafts, so its rate is understated.
The patch keeps the drafted-tokens-per-position counts the scheduler already
reports (``SpecDecodingStats.num_draft_tokens_per_pos``) and divides by those.
For a fixed length the numbers are the same as vLLM's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from vllm.v1.spec_decode.metrics import SpecDecodingLogging, logger

from arctic_inference.patching import ArcticPatch


def per_position_rates(
    accepted_per_pos: Sequence[Sequence[int]], drafted_per_pos: Sequence[Sequence[int]]
) -> np.ndarray:
    """Accepted over drafted tokens at each position, summed over steps (0 where none drafted)."""
    accepted = np.sum(np.asarray(accepted_per_pos, dtype=np.float64), axis=0)
    drafted = np.sum(np.asarray(drafted_per_pos, dtype=np.float64), axis=0)
    return np.divide(accepted, drafted, out=np.zeros_like(accepted), where=drafted > 0)


class SpecDecodingLoggingPatch(ArcticPatch[SpecDecodingLogging]):
    """Log per-position acceptance over the drafts that reached each position."""

    _orig_reset = SpecDecodingLogging.reset
    _orig_observe = SpecDecodingLogging.observe
    _orig_log = SpecDecodingLogging.log

    def reset(self):
        SpecDecodingLoggingPatch._orig_reset(self)
        self.drafted_tokens_per_pos_lists = []

    def observe(self, spec_decoding_stats):
        SpecDecodingLoggingPatch._orig_observe(self, spec_decoding_stats)
        if not hasattr(self, "drafted_tokens_per_pos_lists"):
            self.drafted_tokens_per_pos_lists = []
        self.drafted_tokens_per_pos_lists.append(spec_decoding_stats.num_draft_tokens_per_pos)

    def log(self, log_fn=logger.info):
        drafted = getattr(self, "drafted_tokens_per_pos_lists", None)
        if self.is_diffusion or not self.num_drafts or not drafted:
            return SpecDecodingLoggingPatch._orig_log(self, log_fn)
        rates = per_position_rates(self.accepted_tokens_per_pos_lists, drafted)

        def log_with_rates(fmt: str, *args):
            # vLLM's message, with the per-position argument replaced.
            args = list(args)
            args[5] = ", ".join(f"{p:.3f}" for p in rates)
            log_fn(fmt, *args)

        return SpecDecodingLoggingPatch._orig_log(self, log_with_rates)
