"""Load-aware back-off: when to draft less, or not at all.

Why: a draft costs verification work in the target model. With one request in
flight that work rides on an otherwise idle GPU step, so drafting is almost
free. In a busy batch every rejected draft token is compute (and sampler work)
taken from all other requests, so drafts must earn their place. The policy
keeps, per request, a draft budget that grows while drafts are fully accepted
and shrinks to what was accepted when they are not (additive-increase /
multiplicative-decrease, as in congestion control), sits out an exponentially
growing number of steps after fully rejected drafts, and drops drafts whose
calibrated expected gain (tree score x observed acceptance rate) is too small.
Below ``busy_batch_size`` active requests it only keeps statistics.
"""

from __future__ import annotations

from dataclasses import dataclass

from arctic_inference.suffix_decoding.draft import SuffixDecodingDraft


@dataclass(slots=True)
class _RequestStats:
    budget: int
    rate: float  # moving average of accepted / drafted
    skip: int = 0  # steps left to sit out
    penalty: int = 0  # length of the next sit-out
    last_drafted: int = 0


class LoadAwareBackoff:
    """Per-request draft budgets that react to acceptance and batch load."""

    def __init__(
        self,
        busy_batch_size: int = 4,
        start_budget: int = 4,
        max_skip: int = 16,
        min_expected_tokens: float = 0.5,
        prior_rate: float = 0.5,
        smoothing: float = 0.3,
    ) -> None:
        if busy_batch_size < 1 or start_budget < 1 or max_skip < 0:
            raise ValueError("busy_batch_size and start_budget must be >= 1, max_skip >= 0")
        if not 0.0 <= prior_rate <= 1.0 or not 0.0 < smoothing <= 1.0:
            raise ValueError("prior_rate must be in [0, 1] and smoothing in (0, 1]")
        self.busy_batch_size = busy_batch_size
        self.start_budget = start_budget
        self.max_skip = max_skip
        self.min_expected_tokens = min_expected_tokens
        self.prior_rate = prior_rate
        self.smoothing = smoothing
        self._stats: dict = {}

    def start(self, req_id) -> None:
        self._stats[req_id] = _RequestStats(budget=self.start_budget, rate=self.prior_rate)

    def stop(self, req_id) -> None:
        self._stats.pop(req_id, None)

    def observe(self, req_id, num_new_tokens: int) -> None:
        """Learn from the tokens a step produced after our last draft."""
        st = self._stats[req_id]
        k = st.last_drafted
        if k == 0:
            return
        st.last_drafted = 0
        accepted = min(max(num_new_tokens - 1, 0), k)
        st.rate += self.smoothing * (accepted / k - st.rate)
        if accepted == k:
            st.budget = min(2 * st.budget, 1 << 16)
            st.penalty = 0
        elif accepted == 0:
            st.budget = max(1, st.budget // 2)
            st.penalty = min(max(1, 2 * st.penalty), self.max_skip)
            st.skip = st.penalty
        else:
            st.budget = accepted + 1
            st.penalty = 0

    def busy(self, num_active: int) -> bool:
        return num_active >= self.busy_batch_size

    def should_skip(self, req_id, num_active: int) -> bool:
        """True if the request sits this step out (no tree work at all)."""
        st = self._stats[req_id]
        if st.skip > 0 and self.busy(num_active):
            st.skip -= 1
            return True
        return False

    def filter(self, req_id, draft: SuffixDecodingDraft, num_active: int) -> SuffixDecodingDraft:
        """Trim the draft to what the load allows and remember its length."""
        st = self._stats[req_id]
        if draft.token_ids and self.busy(num_active):
            if draft.score * st.rate < self.min_expected_tokens:
                draft = SuffixDecodingDraft(source=draft.source, match_len=draft.match_len)
            else:
                # Draft tokens come best-first, so a prefix is a valid draft.
                draft = draft.truncated(st.budget)
        st.last_drafted = len(draft.token_ids)
        return draft
