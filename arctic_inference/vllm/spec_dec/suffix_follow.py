"""Keeping a suffix-decoding cache in step with the batch without drafting.

A suffix cache learns from every token a request samples, so a step that makes
no suffix drafts (hybrid steps the speculator wins, or any step of a batch at or
over ``disable_by_batch_size``) must still feed it; otherwise the next drafted
step would speculate from a stale tree. ``follow_request`` and ``stop_departed``
are what vLLM 0.26.0's ``SuffixDecodingProposer.propose`` does around its
speculation, without the speculation.

Over the batch cap nobody drafts, so feeding the trees token by token buys
nothing until the batch shrinks again, and it is the host work of a large batch
(two native tree extensions per request and step, each walking up to the tree
depth). :class:`DeferredFollow` keeps those steps' tokens in plain lists instead
and hands them over in one call per request: when drafting resumes (so every
draft is made from the trees eager following would have built), or when the
request leaves; a request that never drafted puts its response straight into
the global tree and never builds a request tree over its prompt.
"""

from __future__ import annotations

from typing import Any


def follow_request(cache: Any, input_batch: Any, i: int, sampled: list[int]) -> None:
    """Start batch row ``i``'s tree on first sight and append its newly sampled tokens."""
    req_id = input_batch.req_ids[i]
    if req_id not in cache.active_requests:
        if req_id in cache.cached_requests:
            cache.evict_cached_response(req_id)
        index = input_batch.req_id_to_index[req_id]
        n_prompt = input_batch.num_prompt_tokens[index]
        cache.start_request(req_id, input_batch.token_ids_cpu[index, :n_prompt])
    cache.add_active_response(req_id, sampled)


def stop_departed(cache: Any, input_batch: Any) -> set[str]:
    """Stop the active requests that left the batch; returns their ids."""
    gone = set(cache.active_requests) - set(input_batch.req_id_to_index)
    for req_id in gone:
        cache.stop_request(req_id)
    return gone


class DeferredFollow:
    """Tokens sampled over the batch cap that the suffix cache has not seen yet."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache
        self.pending: dict[str, list[int]] = {}  # req_id -> tokens, oldest first

    def defer(self, input_batch: Any, sampled_token_ids: list[list[int]]) -> set[str]:
        """A step with no drafts for anyone: note its tokens; returns the ids that left."""
        req_ids = input_batch.req_ids
        pending = self.pending
        for i, sampled in enumerate(sampled_token_ids):
            if sampled:
                tokens = pending.get(req_ids[i])
                if tokens is None:
                    pending[req_ids[i]] = list(sampled)
                else:
                    tokens.extend(sampled)
        return self._retire_departed(input_batch)

    def catch_up(self, input_batch: Any) -> set[str]:
        """Before a drafting step: the cache as eager following would have left it.

        Returns the ids of the requests it stopped because they left the batch.
        With nothing pending it does nothing: the drafting step itself stops the
        requests that left, as it does without a cap.
        """
        if not self.pending:
            return set()
        gone = self._retire_departed(input_batch)
        for req_id, tokens in self.pending.items():
            follow_request(self.cache, input_batch, input_batch.req_id_to_index[req_id], tokens)
        self.pending.clear()
        return gone

    def _retire_departed(self, input_batch: Any) -> set[str]:
        """Hand the cache the tokens of requests that left, stop them; returns their ids."""
        present = input_batch.req_id_to_index
        cache = self.cache
        gone = {r for r in self.pending if r not in present}
        for req_id in gone:
            tokens = self.pending.pop(req_id)
            if req_id in cache.active_requests:
                cache.add_active_response(req_id, tokens)
            else:  # it never drafted: only its response is kept
                cache.cache_response(req_id, tokens)
        if cache.active_requests:
            gone |= stop_departed(cache, input_batch)
        return gone
