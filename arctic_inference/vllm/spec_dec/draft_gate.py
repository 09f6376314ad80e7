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
gate measures both sides.

At each step the gate notes how many tokens the batch sampled and how long the
step took (from one ``propose`` call to the next: the proposal, scheduling,
and the forward that verified it), and keeps a rate, tokens per
second, for drafting steps and for plain steps, per batch-size bucket (1, 2,
3-4, 5-8, ...: a draft that pays for one request may not for 16). It then
drafts when the drafting rate is the higher one. So that both rates stay
current, the last ``probe_steps`` steps of every ``probe_every`` take the
other choice: when drafting does not pay, it still runs that share of the
steps (about 6 % by default) and drafting resumes as soon as it pays again.
Until both rates are known, the gate drafts.

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
from collections.abc import Callable


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
    drafted: bool


@dataclasses.dataclass
class DraftGate:
    """Decides per step whether the speculator drafts (see the module doc)."""

    probe_every: int = 64
    probe_steps: int = 4
    window: int = 16  # steps of each choice its rate is measured over
    min_observed: int = 4  # observations of each choice before the rates are compared
    clock: Callable[[], float] = time.perf_counter
    rates: dict[tuple[int, bool], StepRate] = dataclasses.field(default_factory=dict)
    _step: int = 0
    _last: _Decision | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.probe_steps < self.probe_every:
            raise ValueError("probe_steps must be at least 0 and below probe_every")

    def decide(self, tokens_sampled: int, batch_size: int) -> bool:
        """Whether to draft this step, given the tokens the batch sampled in the step
        that the previous decision shaped."""
        now = self.clock()
        if self._last is not None and tokens_sampled > 0:
            self._observe(self._last, tokens_sampled, now - self._last.at)
        bucket = batch_bucket(batch_size)
        best = self.preferred(bucket)
        probing = self._step % self.probe_every >= self.probe_every - self.probe_steps
        drafted = best != probing
        self._step += 1
        self._last = _Decision(now, bucket, drafted)
        return drafted

    def pause(self) -> None:
        """A step the gate does not decide (e.g. over the batch cap): the next step's
        time is not attributed to any choice."""
        self._last = None

    def preferred(self, bucket: int) -> bool:
        """The choice with the higher measured rate; drafting until both are known."""
        on, off = self.rates.get((bucket, True)), self.rates.get((bucket, False))
        if on is None or off is None or min(on.observed, off.observed) < self.min_observed:
            return True
        return on.per_second >= off.per_second

    def _observe(self, decision: _Decision, tokens: int, seconds: float) -> None:
        key = (decision.bucket, decision.drafted)
        rate = self.rates.get(key)
        if rate is None:
            rate = self.rates[key] = StepRate(self.window)
        rate.observe(tokens, seconds)
