"""Keeping a suffix-decoding cache in step with the batch without drafting.

A suffix cache learns from every token a request samples, so a step that makes
no suffix drafts (hybrid steps the speculator wins, or any step of a batch at or
over ``disable_by_batch_size``) must still feed it; otherwise the next drafted
step would speculate from a stale tree. These two calls are what vLLM 0.26.0's
``SuffixDecodingProposer.propose`` does around its speculation, without the
speculation, which is the part that costs host time in a large batch.
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


def follow_without_drafts(
    cache: Any, input_batch: Any, sampled_token_ids: list[list[int]]
) -> list[list[int]]:
    """A step with no drafts for anyone: the cache follows, every draft is empty."""
    for i, sampled in enumerate(sampled_token_ids):
        if sampled:
            follow_request(cache, input_batch, i, sampled)
    stop_departed(cache, input_batch)
    return [[] for _ in sampled_token_ids]
