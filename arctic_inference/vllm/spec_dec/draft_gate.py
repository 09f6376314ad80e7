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
steps of every ``probe_every`` take each other choice in turn,
``probe_steps`` steps each: a choice that does not pay still runs that share
of the steps (about 6 % by default for each) and is taken again as soon as it
pays. Until every rate is known, the gate takes choice 0.

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
    choice: int


@dataclasses.dataclass
class DraftGate:
    """Chooses per step how much the proposer drafts (see the module doc)."""

    choices: int = 2  # 0 drafts the most, ``choices - 1`` drafts nothing
    probe_every: int = 64
    probe_steps: int = 4  # steps of each other choice in every ``probe_every``
    window: int = 16  # steps of each choice its rate is measured over
    min_observed: int = 4  # observations of every choice before the rates are compared
    clock: Callable[[], float] = time.perf_counter
    rates: dict[tuple[int, int], StepRate] = dataclasses.field(default_factory=dict)
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

    def choose(self, tokens_sampled: int, batch_size: int) -> int:
        """This step's choice, given the tokens the batch sampled in the step that the
        previous choice shaped."""
        now = self.clock()
        if self._last is not None and tokens_sampled > 0:
            self._observe(self._last, tokens_sampled, now - self._last.at)
        bucket = batch_bucket(batch_size)
        best = self.best(bucket)
        others = [c for c in range(self.choices) if c != best]
        probes_from = self.probe_every - self.probe_steps * len(others)
        phase = self._step % self.probe_every
        choice = best if phase < probes_from else others[(phase - probes_from) // self.probe_steps]
        self._step += 1
        self._last = _Decision(now, bucket, choice)
        return choice

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
        rate = self.rates.get(key)
        if rate is None:
            rate = self.rates[key] = StepRate(self.window)
        rate.observe(tokens, seconds)
