"""Hybrid drafting: suffix decoding where the text repeats, the Arctic speculator elsewhere.

Every step both sources may draft for a request; the request takes the suffix
draft when it promises at least as many accepted tokens as the speculator is
currently getting accepted, the speculator's draft otherwise. A suffix
draft's promise is its score (the sum of its tokens' estimated probabilities
of being reached, i.e. its expected accepted length). The speculator's is
measured: a running mean of the tokens accepted from its recent drafts,
starting at its full draft length (so at the start suffix must promise a
whole speculator draft's worth to win). A suffix draft may be as long as
``num_speculative_tokens`` (up to the tree depth); the speculator's is its own
length, so the two lengths differ from request to request.

The choice does not depend on the speculator's tokens, only on whether it may
draft for the request, so the suffix drafts are made first and the speculator
runs only for the requests that will take its draft: where the text repeats
everywhere, a hybrid step costs what a suffix step costs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal

from arctic_inference.vllm.spec_dec.suffix_follow import (
    DeferredFollow,
    follow_request,
    stop_departed,
)

Source = Literal["suffix", "arctic", "none"]


def pick_source(
    suffix_score: float, suffix_len: int, arctic_expected: float, arctic_ok: bool
) -> Source:
    """The draft a request takes this step."""
    if suffix_len > 0 and (not arctic_ok or suffix_score >= arctic_expected):
        return "suffix"
    return "arctic" if arctic_ok else "none"


@dataclasses.dataclass
class AcceptanceEstimate:
    """Running mean of accepted tokens per speculator draft (exponentially weighted)."""

    expected: float
    weight: float = 0.05
    observed: int = 0

    def observe(self, accepted: int) -> None:
        self.observed += 1
        # The first observations replace the prior quickly, later ones average.
        w = max(self.weight, 1.0 / self.observed)
        self.expected += w * (accepted - self.expected)


@dataclasses.dataclass(frozen=True)
class SuffixSettings:
    """The suffix-decoding fields of vLLM's ``SpeculativeConfig`` that hybrid drafting reads."""

    max_tree_depth: int
    max_cached_requests: int
    max_spec_factor: float
    min_token_prob: float

    @classmethod
    def of(cls, speculative_config: Any) -> SuffixSettings:
        cfg = speculative_config
        return cls(
            max_tree_depth=cfg.suffix_decoding_max_tree_depth,
            max_cached_requests=cfg.suffix_decoding_max_cached_requests,
            max_spec_factor=cfg.suffix_decoding_max_spec_factor,
            min_token_prob=cfg.suffix_decoding_min_token_prob,
        )


class HybridDrafter:
    """Keeps the suffix cache in step with the batch and combines its drafts with the speculator's."""

    def __init__(
        self, suffix: SuffixSettings, arctic_draft_tokens: int, max_model_len: int
    ) -> None:
        from arctic_inference.suffix_decoding import SuffixDecodingCache

        self.cache = SuffixDecodingCache(
            max_tree_depth=suffix.max_tree_depth,
            max_cached_requests=suffix.max_cached_requests,
        )
        self.follow = DeferredFollow(self.cache)  # tokens of steps over the batch cap
        self.max_tree_depth = suffix.max_tree_depth
        self.max_spec_factor = suffix.max_spec_factor
        self.min_token_prob = suffix.min_token_prob
        self.max_model_len = max_model_len
        self.arctic = AcceptanceEstimate(expected=float(arctic_draft_tokens))
        self.last_source: dict[str, Source] = {}
        self.chosen = {"suffix": 0, "arctic": 0, "none": 0}

    @classmethod
    def from_config(cls, speculative_config: Any, max_model_len: int) -> HybridDrafter:
        """The drafter for an engine's speculative config (method "arctic", suffix on)."""
        from arctic_inference.vllm.spec_dec.spec_config import arctic_draft_tokens

        return cls(
            SuffixSettings.of(speculative_config),
            arctic_draft_tokens(speculative_config),
            max_model_len,
        )

    def _observe(self, req_ids: Sequence[str], sampled, num_draft: Sequence[int] | None) -> None:
        """Learn from last step: tokens accepted from each request's speculator draft."""
        if num_draft is None:
            return
        for i, req_id in enumerate(req_ids):
            if sampled[i] and num_draft[i] > 0 and self.last_source.get(req_id) == "arctic":
                self.arctic.observe(len(sampled[i]) - 1)

    def _suffix_draft(self, input_batch: Any, i: int, sampled: list[int], max_tokens: int):
        follow_request(self.cache, input_batch, i, sampled)
        return self._speculate(input_batch, i, max_tokens)

    def _speculate(self, input_batch: Any, i: int, max_tokens: int):
        """The suffix draft for batch row ``i`` from the trees as they are (None at the
        context limit)."""
        n = int(input_batch.num_tokens_no_spec[i])
        room = min(max_tokens, self.max_model_len - n - 1)
        if room < 1:
            return None
        pattern = input_batch.token_ids_cpu[i, max(0, n - self.max_tree_depth) : n]
        return self.cache.speculate(
            input_batch.req_ids[i],
            pattern,
            max_spec_tokens=room,
            max_spec_factor=self.max_spec_factor,
            min_token_prob=self.min_token_prob,
        )

    def combine(
        self,
        input_batch: Any,
        sampled_token_ids: list[list[int]],
        num_draft: Sequence[int] | None,
        arctic_rows: Collection[int],
        arctic_for: Callable[[list[int]], dict[int, list[int]]],
        max_tokens: int,
        drafting: bool,
    ) -> list[list[int]]:
        """One draft per request: the suffix's or the speculator's (see the module doc).

        ``arctic_rows`` are the batch indices the speculator may draft for;
        ``arctic_for(rows)`` drafts for the given ones (batch index -> tokens)
        and is called once, with only the requests that take its draft.
        """
        req_ids = list(input_batch.req_ids[: len(sampled_token_ids)])
        self._observe(req_ids, sampled_token_ids, num_draft)
        # Over the batch cap, or held back by the cost rule: nobody drafts, the tree learns later.
        if not drafting:
            for req_id in req_ids:
                self.last_source[req_id] = "none"
            self.chosen["none"] += len(req_ids)
            self._forget(self.follow.defer(input_batch, sampled_token_ids))
            return [[] for _ in sampled_token_ids]
        self.catch_up(input_batch)
        suffix: list[tuple[list[int], float]] = []
        sources: list[Source] = []
        for i, sampled in enumerate(sampled_token_ids):
            draft = self._suffix_draft(input_batch, i, sampled, max_tokens) if sampled else None
            tokens = list(draft.token_ids) if draft is not None else []
            score = float(draft.score) if draft is not None else 0.0
            suffix.append((tokens, score))
            sources.append(pick_source(score, len(tokens), self.arctic.expected, i in arctic_rows))
        wanted = [i for i, source in enumerate(sources) if source == "arctic"]
        arctic = arctic_for(wanted) if wanted else {}
        out: list[list[int]] = []
        for i, source in enumerate(sources):
            self.last_source[req_ids[i]] = source
            self.chosen[source] += 1
            out.append(
                suffix[i][0]
                if source == "suffix"
                else arctic.get(i, [])
                if source == "arctic"
                else []
            )
        self._forget(stop_departed(self.cache, input_batch))
        return out

    def promise(self, input_batch: Any, num_requests: int, max_tokens: int) -> float:
        """What suffix drafts would get accepted now, in tokens per request: the mean
        score of the drafts the first ``num_requests`` rows would get (0 for a row
        without one; rows the trees have not seen, nothing sampled yet, are left out).

        For a step without drafts, after ``combine`` deferred its tokens: it brings the
        trees up to date first, the work the next drafting step would otherwise do.
        """
        self.catch_up(input_batch)
        active = self.cache.active_requests
        scores = []
        for i in range(num_requests):
            if input_batch.req_ids[i] in active:
                draft = self._speculate(input_batch, i, max_tokens)
                scores.append(float(draft.score) if draft is not None else 0.0)
        return sum(scores) / len(scores) if scores else 0.0

    def catch_up(self, input_batch: Any) -> None:
        """Hand the trees the tokens of the steps that deferred them (``DeferredFollow``).

        A drafting step starts with this; the proposer calls it first when the cost rule
        times the step, so that the rule can leave this work, which the steps without
        drafts put off, out of the drafting step's time.
        """
        self._forget(self.follow.catch_up(input_batch))

    def _forget(self, departed: set[str]) -> None:
        for req_id in departed:
            self.last_source.pop(req_id, None)
