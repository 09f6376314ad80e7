"""The speculator's cost rule: draft only while drafting measurably raises throughput.

A speculator draft costs its proposal and the verification of its tokens; it
pays back only the tokens the target accepts. Where the speculator has little
to predict (a random-weight model, text it was not trained on) every draft
fails and each step is slower than a plain decode step: one request at a time,
2 % of drafted tokens accepted made the MLP speculator x0.74 of no speculation
on small-llama. With this rule the same engine ran x1.15 faster than drafting
every step, side by side (``bench/spec/RESULTS.md``, eighth session).
Acceptance alone cannot say where the break-even lies, since the cost of a
draft depends on the model, the GPU, the batch and the graph mode; so the
gate measures every choice.

The gate chooses among ordered *choices*, from drafting the most (0) to
drafting nothing (the last). The speculator alone has two: draft, or not.
Hybrid has three: the speculator and suffix decoding, suffix decoding alone,
nothing; so the rule can drop a speculator that adds nothing to the suffix
drafts, and also the suffix drafts where the text does not repeat.

At each step the gate notes how many tokens the batch sampled and how long the
step took (from one ``propose`` call to the next: the proposal, scheduling,
and the forward that verified it), and keeps a rate, tokens per second, for
each choice, per batch-size bucket (1, 2, 3-4, 5-8, ...: a draft that pays for
one request may not for 16). It then takes the choice with the highest rate
(the one drafting more on a tie). So that every rate stays current, the last
steps of every ``probe_every`` (a probe cycle) take each other choice in turn,
``probe_steps`` steps each, and a choice is taken again as soon as it pays.
Until every rate is known, the gate takes choice 0.

A probe is not free: it runs a choice the gate believes slower, and at batch 32
on small-llama the speculator's probes alone (6 % of the steps) cost the engine
about 9 % against one that never drafts (``bench/spec/RESULTS.md``, twelfth
session). So a choice that keeps losing by more than ``backoff_margin`` is
probed less often: every 2, 4, ... up to ``2**probe_backoff`` cycles, and every
cycle again once it comes within the margin. The judgement takes the choice's
whole window, its last four probes by default: one probe of four steps is too
few to judge on (a single accepted token moves its rate by a quarter), and a
change of regime large enough to matter shows within a probe or two, since
every probe refreshes a quarter of the window.

A rate measures the requests that were in the batch when it was taken. Where
half of the batch is new since (one request at a time: every new request), the
rates of the choices drafting more than the best one are stale, while the rate
of drafting less is not: the cost of no drafts does not depend on the text.
A choice that drafts more and was within ``regime_margin`` of the best is then
probed at once, and its rate is taken anew from that probe. Without this, one
request at a time on copy-llama, a request whose text did not repeat made "no
drafts" the best, and the next request, one that quotes its context, ran without
drafts until the thinned probe of suffix drafts came due (hybrid x0.87 of suffix
decoding alone, ``bench/spec/RESULTS.md``, thirteenth session). A choice further
behind (the speculator on a random-weight model at batch 32, a third of the best's
rate) keeps its thinned probes: a new batch does not close such a gap.

Within a request the text can change too: a stretch that does not repeat makes "no
drafts" the best, and when the text repeats again the rates cannot show it until a
drafting choice is probed. Where someone can tell without drafting (hybrid: the suffix
trees' own estimate of how many tokens their drafts would get accepted), it says so
with ``reconsider``: each named choice that drafts more than the best is probed at once
and measured afresh, whatever its margin. A choice re-probed this way waits
``evidence_cooldown`` steps before the next such probe, twice as long each time it is
still not the best, so evidence that keeps being wrong costs a shrinking share of the
steps (one probe of four steps per 16, 32, ... up to the thinnest probe cycle).

Work a step does for earlier steps is left out of its time (``discount``): a
hybrid step that drafts after steps without drafts first feeds the suffix trees
what those steps deferred.

Each rate is taken over the choice's last ``window`` steps, leaving out a step
more than four times their median (an idle engine between requests, a long
prefill): such a step measures the arrival of work, not the choice.

The gate is per process. Under tensor parallelism the proposer lets rank 0's
gate choose and broadcasts that choice (``proposer.shared_choice``): every
rank must run the sharded speculator's collectives together.
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
import time
from collections.abc import Callable, Iterable


@dataclasses.dataclass
class StepRate:
    """Tokens per second over a choice's last ``window`` steps, outliers left out.

    A window rather than a running mean: one idle gap counted by mistake would
    weigh on a running mean for many steps; here the median drops it at once.
    """

    window: int = 16
    outlier_factor: float = 4.0  # a step this many times the median is not counted
    steps: collections.deque = dataclasses.field(default_factory=collections.deque)

    def observe(self, tokens: int, seconds: float) -> None:
        self.steps.append((tokens, seconds))
        if len(self.steps) > self.window:
            self.steps.popleft()

    @property
    def observed(self) -> int:
        return len(self.steps)

    @property
    def per_second(self) -> float:
        if not self.steps:
            return 0.0
        limit = self.outlier_factor * statistics.median(s for _, s in self.steps)
        kept = [(t, s) for t, s in self.steps if s <= limit]
        seconds = sum(s for _, s in kept)
        return sum(t for t, _ in kept) / seconds if seconds > 0 else 0.0


def batch_bucket(batch_size: int) -> int:
    """Buckets 1, 2, 3-4, 5-8, ...: batches that cost a draft about the same."""
    return (max(batch_size, 1) - 1).bit_length()


@dataclasses.dataclass
class _Decision:
    at: float
    bucket: int
    choice: int


@dataclasses.dataclass
class DraftGate:
    """Chooses per step how much the proposer drafts (see the module doc)."""

    choices: int = 2  # 0 drafts the most, ``choices - 1`` drafts nothing
    probe_every: int = 64
    probe_steps: int = 4  # steps of each other choice in every ``probe_every``
    window: int = 16  # steps of each choice its rate is measured over
    min_observed: int = 4  # observations of every choice before the rates are compared
    probe_backoff: int = 3  # a losing choice is probed every 2**k cycles, k at most this
    backoff_margin: float = 0.1  # losing: a rate more than this share below the best's
    regime_margin: float = 0.25  # re-probed on a new batch: drafting more, this close to the best
    evidence_cooldown: int = 16  # steps between evidence-led probes; doubles while they lose
    clock: Callable[[], float] = time.perf_counter
    rates: dict[tuple[int, int], StepRate] = dataclasses.field(default_factory=dict)
    # Per (bucket, choice): its backoff level (how many times in a row it lost when its
    # probe came due, at most probe_backoff; dropped while it is the best), the cycle its
    # next probe is due, and the cycle being probed now.
    backoff: dict[tuple[int, int], int] = dataclasses.field(default_factory=dict)
    _next_probe: dict[tuple[int, int], int] = dataclasses.field(default_factory=dict)
    _probing: dict[tuple[int, int], int] = dataclasses.field(default_factory=dict)
    # Per bucket: requests that arrived since its rates were last judged stale. Per
    # (bucket, choice) being measured anew: its fresh rate, which replaces the stale one
    # once it holds min_observed steps. The probes a new batch asked for, one per step.
    _arrived: dict[int, int] = dataclasses.field(default_factory=dict)
    _fresh: dict[tuple[int, int], StepRate] = dataclasses.field(default_factory=dict)
    _urgent: collections.deque = dataclasses.field(default_factory=collections.deque)
    # Per (bucket, choice) re-probed on evidence: the cooldown its next evidence-led probe
    # sets (doubling; dropped once it is the best), and the step before which evidence
    # does not re-probe it again.
    _evidence_wait: dict[tuple[int, int], int] = dataclasses.field(default_factory=dict)
    _evidence_after: dict[tuple[int, int], int] = dataclasses.field(default_factory=dict)
    _step: int = 0
    _last: _Decision | None = None

    def __post_init__(self) -> None:
        if self.choices < 2:
            raise ValueError("a gate needs at least two choices (draft, or not)")
        if not 0 <= self.probe_steps * (self.choices - 1) < self.probe_every:
            raise ValueError(
                "probe_steps for each other choice must be at least 0 and leave "
                "probe_every room for the preferred choice"
            )
        if self.probe_backoff < 0 or not 0 <= self.backoff_margin < 1:
            raise ValueError("probe_backoff must be at least 0 and backoff_margin in [0, 1)")
        if not 0 <= self.regime_margin < 1:
            raise ValueError("regime_margin must be in [0, 1)")
        if self.evidence_cooldown < 1:
            raise ValueError("evidence_cooldown must be at least 1 step")

    def choose(self, tokens_sampled: int, batch_size: int, arrivals: int = 0) -> int:
        """This step's choice, given the tokens the batch sampled in the step that the
        previous choice shaped and how many of this step's requests are new to the batch."""
        now = self.clock()
        if self._last is not None and tokens_sampled > 0:
            self._observe(self._last, tokens_sampled, now - self._last.at)
        bucket = batch_bucket(batch_size)
        if arrivals > 0:
            self._note_arrivals(bucket, batch_size, arrivals)
        while self._urgent and self._urgent[0][0] != bucket:
            self._urgent.popleft()  # asked for by a batch of another size
        if self._urgent:  # a new batch's probe: outside the probe cycle's count
            choice = self._urgent.popleft()[1]
            self._last = _Decision(now, bucket, choice)
            return choice
        best = self.best(bucket)
        others = [c for c in range(self.choices) if c != best]
        probes_from = self.probe_every - self.probe_steps * len(others)
        cycle, phase = divmod(self._step, self.probe_every)
        if self.backoff.pop((bucket, best), 0):  # the best is probed fully once it loses
            del self._next_probe[(bucket, best)]
        self._evidence_wait.pop((bucket, best), None)
        choice = best
        if phase >= probes_from:
            slot, offset = divmod(phase - probes_from, self.probe_steps)
            if self._probe_due(bucket, others[slot], best, cycle, first_step=offset == 0):
                choice = others[slot]
        self._step += 1
        self._last = _Decision(now, bucket, choice)
        return choice

    def _probe_due(self, bucket: int, choice: int, best: int, cycle: int, first_step: bool) -> bool:
        """Whether ``choice`` is probed in this cycle's slot; decided on the slot's first
        step, where a due probe also sets when the next one comes (see the module doc)."""
        key = (bucket, choice)
        if first_step and cycle >= self._next_probe.get(key, 0):
            losing = self._losing(bucket, choice, best)
            level = min(self.backoff.get(key, 0) + 1, self.probe_backoff) if losing else 0
            self.backoff[key] = level
            self._next_probe[key] = cycle + (1 << level)
            self._probing[key] = cycle
        return self._probing.get(key) == cycle

    def _share_of_best(self, bucket: int, choice: int, best: int) -> float | None:
        """``choice``'s measured rate as a share of ``best``'s; None until both are known."""
        mine, top = self.rates.get((bucket, choice)), self.rates.get((bucket, best))
        if mine is None or top is None or min(mine.observed, top.observed) < self.min_observed:
            return None
        return mine.per_second / top.per_second if top.per_second > 0 else 1.0

    def _losing(self, bucket: int, choice: int, best: int) -> bool:
        """Whether ``choice``'s measured rate is more than the margin below ``best``'s."""
        share = self._share_of_best(bucket, choice, best)
        return share is not None and share < 1 - self.backoff_margin

    def _note_arrivals(self, bucket: int, batch_size: int, arrivals: int) -> None:
        """Count new requests; once half the batch is new, probe at once each choice that
        drafts more than the best and was close to it, and measure its rate anew."""
        arrived = self._arrived[bucket] = self._arrived.get(bucket, 0) + arrivals
        if 2 * arrived < batch_size:
            return
        self._arrived[bucket] = 0
        best = self.best(bucket)
        close = []
        for choice in range(best):
            share = self._share_of_best(bucket, choice, best)
            if share is not None and share >= 1 - self.regime_margin:
                close.append(choice)
        self._probe_afresh(bucket, close)

    def reconsidering(self, batch_size: int, choices: Iterable[int]) -> list[int]:
        """Those of ``choices`` that evidence would have probed now: drafting more than
        the best, not being measured afresh already, past their evidence cooldown. Lets
        the caller skip gathering evidence that would change nothing."""
        bucket = batch_bucket(batch_size)
        best = self.best(bucket)
        return [
            choice
            for choice in sorted(set(choices))
            if choice < best
            and (bucket, choice) not in self._fresh
            and self._step >= self._evidence_after.get((bucket, choice), 0)
        ]

    def reconsider(self, batch_size: int, choices: Iterable[int]) -> bool:
        """Evidence the rates cannot show yet that ``choices`` may pay now: each one
        drafting more than the best is probed at once and measured afresh, whatever its
        margin, unless its evidence cooldown runs (see the module doc). Returns whether
        any probe was queued."""
        bucket = batch_bucket(batch_size)
        wanted = self.reconsidering(batch_size, choices)
        thinnest = self.probe_every << self.probe_backoff
        for choice in wanted:
            key = (bucket, choice)
            wait = min(self._evidence_wait.get(key, self.evidence_cooldown), thinnest)
            self._evidence_after[key] = self._step + wait
            self._evidence_wait[key] = 2 * wait
        self._probe_afresh(bucket, wanted)
        return bool(wanted)

    def _probe_afresh(self, bucket: int, choices: Iterable[int]) -> None:
        """Probe ``choices`` at once, ``probe_steps`` each, and take their rates anew
        from those steps (the old rates stay until the new ones are measured)."""
        for choice in choices:
            key = (bucket, choice)
            self._fresh[key] = StepRate(self.window)
            self.backoff.pop(key, None)
            self._next_probe.pop(key, None)
            self._urgent.extend([key] * self.probe_steps)

    def discount(self, seconds: float) -> None:
        """Leave ``seconds`` of the step under way out of its choice's time: work that
        step does for earlier steps (the suffix trees catching up on the tokens of steps
        without drafts), which would otherwise be booked to its own choice."""
        if self._last is not None:
            self._last = dataclasses.replace(self._last, at=self._last.at + seconds)

    def drafts_nothing(self, choice: int) -> bool:
        """Whether ``choice`` is the last one, which drafts nothing."""
        return choice == self.choices - 1

    def pause(self) -> None:
        """A step the gate does not decide (e.g. over the batch cap): the next step's
        time is not attributed to any choice."""
        self._last = None

    def best(self, bucket: int) -> int:
        """The choice with the highest measured rate; choice 0 until every rate is known."""
        rates = [self.rates.get((bucket, c)) for c in range(self.choices)]
        if any(r is None or r.observed < self.min_observed for r in rates):
            return 0
        speeds = [r.per_second for r in rates if r is not None]
        return max(range(self.choices), key=lambda c: (speeds[c], -c))

    def _observe(self, decision: _Decision, tokens: int, seconds: float) -> None:
        key = (decision.bucket, decision.choice)
        fresh = self._fresh.get(key)
        if fresh is not None:  # measured anew after a new batch: the old steps are stale
            fresh.observe(tokens, seconds)
            if fresh.observed >= self.min_observed:
                self.rates[key] = self._fresh.pop(key)
            return
        rate = self.rates.get(key)
        if rate is None:
            rate = self.rates[key] = StepRate(self.window)
        rate.observe(tokens, seconds)
