"""One timed phase of a bench: rounds of a workload until it has lasted long enough.

The benches on the lent GPU see ten-second phases of the same engine differ by 10-25 %,
which hides the effects they measure. A phase's total alone cannot say whether a few
rounds stalled (a host hiccup inside an otherwise steady phase) or every round ran
slower (a slower host for the whole phase); the two call for different fixes. So a phase
keeps the time of each round, and ``stall_share`` reads off how much of the phase went
to rounds far slower than its typical one.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence

__all__ = ["STALL_FACTOR", "Phase", "most_stalled", "spread", "stall_share", "timed_phase"]

# A round this many times slower than the phase's median round counts as a stall.
STALL_FACTOR = 1.5


@dataclasses.dataclass(frozen=True)
class Phase:
    """What one timed phase produced: its tokens and the wall time of each round."""

    tokens: int
    round_seconds: tuple[float, ...]
    seconds: float  # the whole phase, start to end, as the clock read it

    @property
    def rounds(self) -> int:
        return len(self.round_seconds)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds

    def record(self) -> dict:
        """The phase's fields for a bench row (round times to 0.1 ms)."""
        return {
            "seconds": self.seconds,
            "rounds": self.rounds,
            "tokens": self.tokens,
            "tok_per_s": self.tokens_per_s,
            "round_seconds": [round(s, 4) for s in self.round_seconds],
            "stall_share": stall_share(self.round_seconds),
        }


def timed_phase(
    one_round: Callable[[int], int],
    *,
    min_rounds: int = 1,
    min_seconds: float = 0.0,
    clock: Callable[[], float] = time.perf_counter,
) -> Phase:
    """Run ``one_round(k)`` for k = 0, 1, ... (it returns the tokens it generated): at
    least ``min_rounds`` rounds, and on until the phase has lasted ``min_seconds``."""
    if min_rounds < 1:
        raise ValueError(f"a phase runs at least one round, not {min_rounds}")
    tokens, laps = 0, []
    start = last = clock()
    while len(laps) < min_rounds or last - start < min_seconds:
        tokens += one_round(len(laps))
        now = clock()
        laps.append(now - last)
        last = now
    return Phase(tokens=tokens, round_seconds=tuple(laps), seconds=last - start)


def stall_share(round_seconds: Sequence[float], factor: float = STALL_FACTOR) -> float:
    """Share of the phase's time spent in rounds slower than ``factor`` x its median round.

    Only meaningful when a phase's rounds are alike (the benches give every round the
    same shape); with fewer than three rounds there is no typical round to compare with,
    and the answer is 0.
    """
    if len(round_seconds) < 3:
        return 0.0
    typical = statistics.median(round_seconds)
    slow = sum(s for s in round_seconds if s > factor * typical)
    return slow / sum(round_seconds)


def most_stalled(shares: Sequence[float | None]) -> float | None:
    """The largest of several phases' stall shares; None when there are none, or when a
    phase comes from a run that kept no round times (its stalls are unknown, not zero)."""
    if not shares or any(v is None for v in shares):
        return None
    return max(shares)


def spread(values: Sequence[float]) -> float:
    """(max - min) / median: how far repetitions of one measurement disagree, as a fraction."""
    if not values:
        raise ValueError("the spread of no values is undefined")
    return (max(values) - min(values)) / statistics.median(values)
