"""The draft object returned by ``SuffixDecodingCache.speculate``."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class SuffixDecodingDraft:
    """Draft tokens plus what the policy needs to judge them.

    ``parents[i]`` is the index of the draft token that ``token_ids[i]``
    follows (-1: it follows the context). A single path has
    ``parents == [-1, 0, 1, ...]``; vLLM consumes ``token_ids`` as a path.
    ``probs`` are cumulative (probability of reaching the token) and ``score``
    is their sum: the expected number of accepted tokens.
    """

    token_ids: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    score: float = 0.0
    match_len: int = 0
    source: str = ""  # "request", "global" or "" when empty

    @property
    def is_tree(self) -> bool:
        """True if some token branches off somewhere other than its predecessor."""
        return any(p != i - 1 for i, p in enumerate(self.parents))

    def truncated(self, n: int) -> SuffixDecodingDraft:
        """First ``n`` tokens; parents precede children, so the prefix stays valid."""
        if n >= len(self.token_ids):
            return self
        probs = self.probs[:n]
        return SuffixDecodingDraft(
            self.token_ids[:n],
            self.parents[:n],
            probs,
            float(sum(probs)),
            self.match_len,
            self.source,
        )

    def __len__(self) -> int:
        return len(self.token_ids)
