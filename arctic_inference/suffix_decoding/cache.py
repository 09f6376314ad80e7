"""``SuffixDecodingCache``: the object vLLM's suffix proposer drives.

Two kinds of native trees: one per active request over its prompt and
response so far (dropped when the request stops), and one global tree over
the responses of recent requests (active ones included), limited to
``max_cached_requests`` responses with least-recently-written eviction.
``speculate`` asks both trees and keeps the draft with the larger expected
number of accepted tokens.
"""

from __future__ import annotations

import atexit
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from itertools import count
from typing import Any

from arctic_inference import envs
from arctic_inference.suffix_decoding import _C
from arctic_inference.suffix_decoding.draft import SuffixDecodingDraft
from arctic_inference.suffix_decoding.policy import policy_from_env

_PROMPT = 0  # sequence id of the prompt+response inside a request tree


def _check_req_id(req_id: Any) -> None:
    if not isinstance(req_id, Hashable) or isinstance(req_id, (float, bool)) or req_id is None:
        raise ValueError(f"request id must be a str or int, got {type(req_id).__name__}")


# Caches still alive when the interpreter exits. vLLM keeps its proposer (and
# so this cache) reachable from engine objects that are never torn down before
# exit: from frames of daemon threads, and from reference cycles that the last
# collection does not reach. Python then frees nanobind's type and function
# objects first, and nanobind reports every native tree still alive as
# "leaked". An atexit hook runs before that teardown: it releases the native
# trees of every live cache, so nothing is left for nanobind to report and the
# native memory is returned in order rather than abandoned.
_LIVE: weakref.WeakSet[SuffixDecodingCache] = weakref.WeakSet()


@atexit.register
def _release_all_at_exit() -> None:
    for cache in list(_LIVE):
        cache.close()


def _draft(result: tuple, source: str) -> SuffixDecodingDraft:
    tokens, parents, probs, score, match_len = result
    return SuffixDecodingDraft(tokens, parents, probs, score, match_len, source if tokens else "")


@dataclass(frozen=True, slots=True)
class SlipRecovery:
    """Settings of the slip-recovery draft (see ``SuffixDecodingCache``).

    After the model substitutes ``skip`` tokens and resumes copying, the exact
    match of the context is only the ``m`` tokens generated since. If
    ``m <= max_tail``, the tree is asked for a stored path: the ``anchor_len``
    (at most, at least ``min_anchor``) context tokens before the slip, any
    other ``skip`` tokens, then those ``m`` tokens; the draft continues it.
    Its score is scaled by ``weight`` before it competes with exact drafts.
    """

    weight: float = 0.5
    max_tail: int = 24
    anchor_len: int = 8
    min_anchor: int = 4
    skips: tuple = (1,)

    @classmethod
    def from_env(cls, environ=None) -> SlipRecovery | None:
        """The settings ARCTIC_INFERENCE_SUFFIX_RECOVER asks for (see ``parse``);
        a bad value raises ``ValueError`` naming the variable."""
        return cls.parse(envs.read(envs.SUFFIX_RECOVER, environ))

    @classmethod
    def parse(cls, text: str) -> SlipRecovery | None:
        """``0``/off = None, ``1``/on = defaults, or comma-separated key=value
        overrides (e.g. ``weight=0.5,skips=1+2``)."""
        raw = text.strip().lower()
        if raw in ("", "0", "off", "false", "no"):
            return None
        if raw in ("1", "on", "true", "yes"):
            return cls()
        kw: dict = {}
        for item in raw.split(","):
            key, _, val = item.partition("=")
            key = key.strip()
            try:
                if key == "skips":
                    kw[key] = tuple(int(v) for v in val.split("+"))
                elif key == "weight":
                    kw[key] = float(val)
                elif key in ("max_tail", "anchor_len", "min_anchor"):
                    kw[key] = int(val)
                else:
                    raise KeyError(key)
            except KeyError:
                raise ValueError(f"unknown ARCTIC_INFERENCE_SUFFIX_RECOVER key {key!r}") from None
            except ValueError:
                raise ValueError(f"{key}={val.strip()!r} is not a number") from None
        return cls(**kw)

    def __post_init__(self) -> None:
        if not 0.0 < self.weight <= 1.0:  # also refuses nan
            raise ValueError(f"weight must be in (0, 1], got {self.weight}")
        if self.max_tail < 0 or self.min_anchor < 1 or self.anchor_len < self.min_anchor:
            raise ValueError("need max_tail >= 0 and 1 <= min_anchor <= anchor_len")
        if not self.skips or any(s not in (1, 2) for s in self.skips):
            raise ValueError(f"skips must be a non-empty tuple of 1 and/or 2, got {self.skips!r}")


def _scaled(d: SuffixDecodingDraft, w: float) -> SuffixDecodingDraft:
    probs = [p * w for p in d.probs]
    return SuffixDecodingDraft(
        d.token_ids, d.parents, probs, float(sum(probs)), d.match_len, d.source
    )


class SuffixDecodingCache:
    """Suffix-tree draft cache with the interface vLLM 0.26.0's proposer uses."""

    def __init__(
        self,
        max_tree_depth: int = 64,
        max_cached_requests: int = -1,
        policy=True,
        tree_min_gain: float = 0.25,
        recovery: SlipRecovery | bool | None = None,
    ) -> None:
        if (
            isinstance(max_tree_depth, bool)
            or not isinstance(max_tree_depth, int)
            or max_tree_depth < 1
        ):
            raise ValueError(f"max_tree_depth must be an int >= 1, got {max_tree_depth!r}")
        if isinstance(max_cached_requests, bool) or not isinstance(max_cached_requests, int):
            raise ValueError(f"max_cached_requests must be an int, got {max_cached_requests!r}")
        self.max_tree_depth = max_tree_depth
        # < 0: unlimited; 0: no global tree (request trees only).
        self.max_cached_requests = max_cached_requests
        self.tree_min_gain = tree_min_gain
        # Slip recovery: None (default) reads ARCTIC_INFERENCE_SUFFIX_RECOVER
        # (off when unset); True = default settings; False = off.
        if recovery is None:
            recovery = SlipRecovery.from_env()
        elif recovery is True:
            recovery = SlipRecovery()
        self.recovery: SlipRecovery | None = recovery or None
        if policy is True:
            # vLLM builds the cache with defaults; env vars pick the policy
            # (see policy.policy_from_env) so benchmarks can compare them.
            policy = policy_from_env()
        # When to draft and how much: CostAwarePolicy, LoadAwareBackoff, NeverDraft or None.
        self.policy = policy or None
        self._global = _C.SuffixTree(max_tree_depth)
        self._local: dict[Hashable, Any] = {}  # req_id -> request tree
        self._seq: dict[Hashable, int] = {}  # req_id -> id in the global tree (cached)
        self._lru: OrderedDict[Hashable, None] = OrderedDict()  # cached ids, oldest first
        self._ids = count(1)
        _LIVE.add(self)

    def close(self) -> None:
        """Release every native tree now; the cache is unusable afterwards."""
        self._local.clear()
        self._seq.clear()
        self._lru.clear()
        self._global = None
        _LIVE.discard(self)

    # ------------------------------------------------------------- views
    @property
    def active_requests(self):
        """Ids of requests started and not yet stopped (a live set view)."""
        return self._local.keys()

    @property
    def cached_requests(self):
        """Ids whose responses are in the global tree (a live set view)."""
        return self._lru.keys()

    @property
    def global_tree(self):
        return self._global

    def request_tree(self, req_id: Hashable):
        return self._tree(req_id)

    # ------------------------------------------------------------- lifecycle
    def start_request(self, req_id: Hashable, prompt_token_ids) -> None:
        """Build the request tree over the prompt; reserve a global slot."""
        _check_req_id(req_id)
        if self._global is None:
            raise RuntimeError("SuffixDecodingCache was closed")
        if req_id in self._local:
            raise ValueError(f"request {req_id!r} is already active")
        tree = _C.SuffixTree(self.max_tree_depth)
        tree.extend(_PROMPT, prompt_token_ids)  # validates the tokens
        self._local[req_id] = tree
        if self.policy is not None:
            self.policy.start(req_id)
        self._reserve_global_slot(req_id)

    def add_active_response(self, req_id: Hashable, token_ids) -> None:
        """Append newly generated tokens to the request and global trees."""
        tree = self._tree(req_id)
        tree.extend(_PROMPT, token_ids)
        seq = self._seq.get(req_id)
        if seq is not None:
            self._global.extend(seq, token_ids)
            self._lru.move_to_end(req_id)
        if self.policy is not None:
            self.policy.observe(req_id, len(token_ids))

    def cache_response(self, req_id: Hashable, token_ids) -> None:
        """Put a finished request's whole response into the global tree at once.

        For a request that never drafted (it lived and finished while the batch
        was over a drafting cap): the global tree ends up as if it had been
        started, fed token by token and stopped, without building a request
        tree over its prompt that nothing would read.
        """
        _check_req_id(req_id)
        if self._global is None:
            raise RuntimeError("SuffixDecodingCache was closed")
        if req_id in self._local:
            raise ValueError(f"request {req_id!r} is active: add_active_response, then stop it")
        seq = self._reserve_global_slot(req_id)
        if seq is None:
            return
        try:
            self._global.extend(seq, token_ids)  # validates the tokens
        except Exception:
            self.evict_cached_response(req_id)  # nothing recorded for refused tokens
            raise

    def stop_request(self, req_id: Hashable) -> None:
        """Drop the request tree; its response stays cached globally."""
        self._tree(req_id)
        del self._local[req_id]
        if self.policy is not None:
            self.policy.stop(req_id)

    def evict_cached_response(self, req_id: Hashable) -> None:
        """Remove a response from the global tree (the request may stay active)."""
        _check_req_id(req_id)
        seq = self._seq.pop(req_id, None)
        if seq is None:
            raise KeyError(f"request {req_id!r} has no cached response")
        del self._lru[req_id]
        self._global.remove(seq)

    def _reserve_global_slot(self, req_id: Hashable) -> int | None:
        """A fresh global-tree id for ``req_id`` (its old response and what the limit
        requires evicted first); None when there is no global tree."""
        if req_id in self._seq:
            self.evict_cached_response(req_id)
        if self.max_cached_requests == 0:
            return None
        while 0 < self.max_cached_requests <= len(self._lru):
            self._evict_one()
        seq = self._seq[req_id] = next(self._ids)
        self._lru[req_id] = None
        return seq

    def _evict_one(self) -> None:
        # Oldest finished response first; an active one only if all are active.
        victim = next((r for r in self._lru if r not in self._local), None)
        self.evict_cached_response(next(iter(self._lru)) if victim is None else victim)

    def _tree(self, req_id: Hashable):
        _check_req_id(req_id)
        if self._global is None:
            raise RuntimeError("SuffixDecodingCache was closed")
        tree = self._local.get(req_id)
        if tree is None:
            raise KeyError(f"request {req_id!r} is not active (start_request first)")
        return tree

    # ------------------------------------------------------------- drafting
    def speculate(
        self,
        req_id: Hashable,
        pattern,
        max_spec_tokens: int | None = None,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
        use_tree_spec: bool = False,
    ) -> SuffixDecodingDraft:
        """Draft continuation tokens for the context ending in ``pattern``.

        The draft is at most ``max_spec_factor * match_len + max_spec_offset``
        long, stops where the cumulative frequency probability falls below
        ``min_token_prob``, and comes from whichever tree (request or global)
        promises more accepted tokens. With ``use_tree_spec`` a branching
        draft is returned when it beats the best path by ``tree_min_gain``.
        """
        tree = self._tree(req_id)
        if max_spec_tokens is None:
            max_spec_tokens = self.max_tree_depth
        if not 0.0 <= min_token_prob <= 1.0:
            raise ValueError(f"min_token_prob must be in [0, 1], got {min_token_prob}")
        if max_spec_factor < 0:
            raise ValueError(f"max_spec_factor must be >= 0, got {max_spec_factor}")
        policy = self.policy
        active = len(self._local)
        if policy is not None and policy.should_skip(req_id, active):
            return SuffixDecodingDraft()
        if policy is not None and hasattr(policy, "spec_factor"):
            max_spec_factor = policy.spec_factor(max_spec_factor, active)
        args = (max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob)
        gseq = self._seq.get(req_id, -1)
        best = self._best(tree, pattern, args, False, gseq)
        if use_tree_spec:
            branched = self._best(tree, pattern, args, True, gseq)
            if branched.score >= best.score + self.tree_min_gain:
                best = branched
        if policy is not None:
            best = policy.filter(req_id, best, active)
        return best

    def _best(
        self, tree, pattern, args: tuple, use_tree: bool, gseq: int = -1
    ) -> SuffixDecodingDraft:
        # Both trees hold the request's own tokens (the request tree from the
        # prompt on, the global one its response): naming that sequence lets
        # the native side find shared suffixes in O(1) (same result).
        local = _draft(tree.speculate(pattern, *args, use_tree, _PROMPT), "request")
        if self._global.num_tokens == 0:
            return local
        shared = _draft(self._global.speculate(pattern, *args, use_tree, gseq), "global")
        best = shared if shared.score > local.score else local
        rec = self.recovery
        if rec is not None and not use_tree:
            best = self._recover(tree, pattern, args, gseq, rec, best)
        return best

    def _recover(
        self, tree, pattern, args: tuple, gseq: int, rec: SlipRecovery, best: SuffixDecodingDraft
    ) -> SuffixDecodingDraft:
        # Drafts that assume the model slipped (substituted tokens) and went
        # on copying; they replace the exact draft only when they promise
        # more after the weight discount (i.e. when the exact match is weak).
        # Longer slips (skip 2) are tried only if no shorter one explains the context.
        for skip in rec.skips:
            found = False
            for t, seq, src in ((tree, _PROMPT, "request"), (self._global, gseq, "global")):
                r = t.recover(
                    pattern, *args, rec.max_tail, rec.anchor_len, rec.min_anchor, skip, seq
                )
                if r[0]:
                    found = True
                    if r[3] * rec.weight > best.score:
                        best = _scaled(_draft(r, src), rec.weight)
            if found:
                break
        return best

    # ------------------------------------------------------------- stats
    def stats(self) -> dict[str, int]:
        """Node and byte counts of all trees (for memory tests and benchmarks)."""
        local_nodes = sum(t.num_nodes for t in self._local.values())
        local_bytes = sum(t.memory_bytes for t in self._local.values())
        return {
            "global_nodes": self._global.num_nodes,
            "global_bytes": self._global.memory_bytes,
            "global_tokens": self._global.num_tokens,
            "request_nodes": local_nodes,
            "request_bytes": local_bytes,
            "total_bytes": self._global.memory_bytes + local_bytes,
            "active": len(self._local),
            "cached": len(self._lru),
        }
