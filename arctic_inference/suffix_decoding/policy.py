"""Draft policies: when to draft less, or not at all.

By default (policy_from_env) no policy is used: the tree's drafts go out as
vLLM's parameters shape them. ``CostAwarePolicy`` (below, ARCTIC_INFERENCE_
SUFFIX_POLICY=cost) decides per token from a step cost model.
``LoadAwareBackoff`` is the earlier heuristic, kept for comparison
(ARCTIC_INFERENCE_SUFFIX_POLICY=legacy). The rest of this note describes it.

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

from dataclasses import dataclass, field

from arctic_inference import envs
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


# --------------------------------------------------------------------------
# Cost-aware policy (opt-in; was the default until the 2026-11-30 sweep).
#
# Cost model: a forward step costs F + c * N, where N is the number of tokens
# the batch verifies (one per request plus all draft tokens) and F everything
# that does not grow with tokens (launches, scheduling, sampling, Python). With
# G tokens generated per step the batch produces G / (F + c N) tokens per unit
# of time. One more draft token adds c to the step and q expected tokens
# (q = probability it is accepted), so it raises the rate exactly when
#     q > theta = r G / (1 + r N),   r = c / F  ("token_cost").
# A lone request (G = N = 1 before it drafts) gets theta ~ r: nearly everything
# with a plausible continuation is drafted, at full length. A batch that already
# verifies many tokens per step raises theta, so only likely tokens are drafted:
# the back-off depends on the tokens the batch verifies, not on a request count.
#
# q must be an acceptance probability, but the tree gives frequencies: a
# continuation seen once after a 1-token match is "certain" to the tree and a
# coin flip to the model. So the policy calibrates: for each draft token it
# keeps the tree's conditional probability, grouped by the length of the
# context it rests on (match length + position, in powers of two) and by
# source tree, and learns observed/expected acceptance per group from the
# tokens vLLM reports back. Groups are shared by all requests (the model and
# workload are), with a prior that trusts the tree until evidence arrives and
# slow forgetting so the estimate follows the workload.
# --------------------------------------------------------------------------

_MAX_BUCKET = 7  # context lengths 1, 2-3, 4-7, ..., 64+


def _bucket(context_len: int) -> int:
    return min(max(context_len, 1).bit_length(), _MAX_BUCKET)


@dataclass(slots=True)
class _CostRequest:
    keys: list = field(default_factory=list)  # calibration group per drafted token
    conds: list = field(default_factory=list)  # tree conditional prob per drafted token
    drafted: int = 0  # length of the last draft (until the next one)
    accepted: int = 0  # tokens accepted from the last verified draft
    pending: bool = False  # a draft awaits its verification result
    skip: int = 0
    penalty: int = 0


class CostAwarePolicy:
    """Keep draft tokens whose calibrated acceptance beats the batch's token cost."""

    def __init__(
        self,
        token_cost: float = 0.01,
        busy_batch_size: int = 4,
        max_skip: int = 16,
        min_draft_gain: float = 0.5,
        prior_weight: float = 2.0,
        forget: float = 1.0 / 1024,
        lone_spec_factor: float = 4.0,
    ) -> None:
        if token_cost < 0 or busy_batch_size < 1 or max_skip < 0 or prior_weight <= 0:
            raise ValueError(
                "token_cost >= 0, busy_batch_size >= 1, max_skip >= 0, prior_weight > 0"
            )
        if not 0.0 <= forget < 1.0:
            raise ValueError("forget must be in [0, 1)")
        self.token_cost = token_cost
        self.busy_batch_size = busy_batch_size
        self.max_skip = max_skip
        self.min_draft_gain = min_draft_gain
        self.prior_weight = prior_weight
        self.forget = forget
        # Below busy_batch_size a token costs ~nothing, so the tree may propose
        # drafts up to lone_spec_factor x match length (vLLM's default factor is
        # 1.0, which after every slip of the model regrows drafts 1, 2, 4, ...);
        # calibration still cuts what short matches do not deliver.
        self.lone_spec_factor = lone_spec_factor
        self._req: dict = {}
        self._calib: dict = {}  # (source, bucket) -> [accepted, expected]
        self._drafted_sum = 0  # sum over active requests of their last draft length
        self._accepted_sum = 0  # sum over active requests of their last accepted count

    # --------------------------------------------------------- bookkeeping
    def start(self, req_id) -> None:
        self._req[req_id] = _CostRequest()

    def stop(self, req_id) -> None:
        st = self._req.pop(req_id, None)
        if st is not None:
            self._drafted_sum -= st.drafted
            self._accepted_sum -= st.accepted

    def busy(self, num_active: int) -> bool:
        return num_active >= self.busy_batch_size

    def factor(self, key) -> float:
        """Observed / expected acceptance of a calibration group (prior: 1)."""
        acc, exp = self._calib.get(key, (0.0, 0.0))
        w = self.prior_weight
        return (acc + w) / (exp + w)

    def spec_factor(self, requested: float, num_active: int) -> float:
        """The max_spec_factor to ask the tree for."""
        return requested if self.busy(num_active) else max(requested, self.lone_spec_factor)

    def threshold(self, num_active: int) -> float:
        """Smallest acceptance probability a draft token needs to pay for itself."""
        r = self.token_cost
        n = max(num_active, 1)
        tokens = n + self._drafted_sum
        gained = n + self._accepted_sum
        return r * gained / (1.0 + r * tokens)

    def observe(self, req_id, num_new_tokens: int) -> None:
        st = self._req[req_id]
        if not st.pending:
            return
        st.pending = False
        k = len(st.keys)
        accepted = min(max(num_new_tokens - 1, 0), k)
        keep = 1.0 - self.forget
        for j in range(min(accepted + 1, k)):  # tokens past the first miss were not judged
            cell = self._calib.get(st.keys[j])
            if cell is None:
                cell = self._calib[st.keys[j]] = [0.0, 0.0]
            cell[0] = cell[0] * keep + (1.0 if j < accepted else 0.0)
            cell[1] = cell[1] * keep + st.conds[j]
        self._accepted_sum += accepted - st.accepted
        st.accepted = accepted
        if accepted == 0:
            st.penalty = min(max(1, 2 * st.penalty), self.max_skip)
            st.skip = st.penalty
        else:
            st.penalty = 0

    def should_skip(self, req_id, num_active: int) -> bool:
        """Sit out after fully rejected drafts, only while the batch is busy."""
        st = self._req[req_id]
        if st.skip > 0 and self.busy(num_active):
            st.skip -= 1
            self._set_drafted(st, 0)
            return True
        return False

    def _set_drafted(self, st: _CostRequest, n: int) -> None:
        self._drafted_sum += n - st.drafted
        st.drafted = n
        if n == 0:
            self._accepted_sum -= st.accepted
            st.accepted = 0

    # --------------------------------------------------------- decision
    def filter(self, req_id, draft: SuffixDecodingDraft, num_active: int) -> SuffixDecodingDraft:
        st = self._req[req_id]
        st.keys = []
        st.conds = []
        if not draft.token_ids:
            self._set_drafted(st, 0)
            return draft
        theta = self.threshold(num_active)
        if draft.is_tree:
            # Best-first tree: a prefix is a subtree; judge by the raw probabilities.
            keep = sum(1 for p in draft.probs if p >= theta)
            out = draft.truncated(keep)
        else:
            q = 1.0
            prev = 1.0
            gain = 0.0
            keep = 0
            for j, p in enumerate(draft.probs):
                cond = p / prev if prev > 0 else 0.0
                prev = p
                key = (draft.source, _bucket(draft.match_len + j))
                q *= min(1.0, cond * self.factor(key))
                if q < theta:
                    break
                st.keys.append(key)
                st.conds.append(cond)
                gain += q
                keep = j + 1
            if self.busy(num_active) and gain < self.min_draft_gain:
                keep = 0
                st.keys, st.conds = [], []
            out = (
                draft.truncated(keep)
                if keep
                else SuffixDecodingDraft(source=draft.source, match_len=draft.match_len)
            )
        st.pending = bool(out.token_ids)
        if out.token_ids and out.is_tree:
            st.pending = False  # tree drafts are not used for calibration
        self._set_drafted(st, len(out.token_ids))
        return out


class NeverDraft:
    """Does all tree work, then drafts nothing: measures the fixed cost of the spec path."""

    def start(self, req_id) -> None:
        pass

    def stop(self, req_id) -> None:
        pass

    def observe(self, req_id, num_new_tokens: int) -> None:
        pass

    def should_skip(self, req_id, num_active: int) -> bool:
        return False

    def filter(self, req_id, draft: SuffixDecodingDraft, num_active: int) -> SuffixDecodingDraft:
        return SuffixDecodingDraft(source=draft.source, match_len=draft.match_len)


POLICIES = envs.SUFFIX_POLICIES


def policy_from_env(environ=None):
    """The policy vLLM-built caches use, chosen by environment variables.

    ARCTIC_INFERENCE_SUFFIX_POLICY: off (default) | cost | legacy | nodraft;
    ARCTIC_INFERENCE_SUFFIX_BACKOFF=0 is an older spelling of "off";
    ARCTIC_INFERENCE_SUFFIX_TOKEN_COST: the cost policy's r (default 0.01);
    ARCTIC_INFERENCE_SUFFIX_LONE_FACTOR: its lone_spec_factor (default 4).
    Types, ranges and defaults are those of ``arctic_inference.envs.SETTINGS``;
    a bad value raises ``ValueError`` naming the variable.
    """
    # Default "off" (raw tree drafts with vLLM's parameters): on the H200 sweep
    # of 2026-11-30 it beat the cost policy in every phase (a: x2.94 vs x2.30,
    # b: x0.97 both, c: x1.57 vs x1.52) and it spends the least CPU per step.
    name = envs.read(envs.SUFFIX_POLICY, environ)
    if not envs.read(envs.SUFFIX_BACKOFF, environ):
        name = "off"
    if name == "off":
        return None
    if name == "legacy":
        return LoadAwareBackoff()
    if name == "nodraft":
        return NeverDraft()
    return CostAwarePolicy(
        token_cost=envs.read(envs.SUFFIX_TOKEN_COST, environ),
        lone_spec_factor=envs.read(envs.SUFFIX_LONE_FACTOR, environ),
    )
