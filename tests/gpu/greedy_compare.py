"""Compare two greedy runs of the same requests: identical share, first divergences, near-ties.

Exact token equality between two bf16 attention implementations that round differently is
a weak signal: one ulp moves a near-tied argmax and the rest of the sequence follows. This
module says *why* two runs differ. For each request whose ids differ it finds the first
divergent position and the reference's logprob gap there between its own token and the
other run's token; over the positions both runs agree on, it measures how far the other
run moves the logprob of the same token. A divergence is a near-tie when the gap is no
larger than twice that movement (the most two perturbed logprobs can swap by). A real bug
shows as a large movement on agreed tokens or a gap far above it.

Inputs are the per-workload dicts of tests/gpu/forest_gpu_scenarios.py: ``outputs`` (ids),
``logprobs`` (logprob of each sampled token), ``top`` (top-k ``{token: logprob}`` per position).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Divergence:
    request: int
    position: int
    ref_token: int
    other_token: int
    # reference logprob of its own token minus that of the other run's token; None when the
    # other token is outside the reference's top-k (then ``gap_floor`` is a lower bound)
    gap: float | None
    gap_floor: float


@dataclass(frozen=True)
class Comparison:
    requests: int
    identical: int
    divergences: tuple[Divergence, ...]
    # max |logprob(ref) - logprob(other)| of the same sampled token, over agreed positions
    agreed_delta: float

    def gaps(self) -> list[float]:
        """The reference's gap at each first divergence (inf where outside its top-k)."""
        return [float("inf") if d.gap is None else d.gap for d in self.divergences]

    @property
    def identical_share(self) -> float:
        return self.identical / self.requests

    def near_tie(self, d: Divergence) -> bool:
        return d.gap is not None and d.gap <= 2 * self.agreed_delta

    @property
    def all_near_ties(self) -> bool:
        return all(self.near_tie(d) for d in self.divergences)

    def summary(self) -> str:
        gaps = sorted(d.gap for d in self.divergences if d.gap is not None)
        outside = sum(d.gap is None for d in self.divergences)
        positions = sorted(d.position for d in self.divergences)
        return (
            f"identical {self.identical}/{self.requests} ({self.identical_share:.3f}); "
            f"agreed-token logprob movement max {self.agreed_delta:.4f}; "
            f"{len(self.divergences)} divergences, near-ties {sum(map(self.near_tie, self.divergences))}, "
            f"outside top-k {outside}; gaps {[round(g, 4) for g in gaps[:8]]}"
            f"{'...' if len(gaps) > 8 else ''} max {max(gaps, default=0.0):.4f}; "
            f"first positions {positions[:8]}{'...' if len(positions) > 8 else ''}"
        )


def compare(ref: dict, other: dict) -> Comparison:
    """``other`` against ``ref``, request by request (same order, same prompts)."""
    ids_a, ids_b = ref["outputs"], other["outputs"]
    if len(ids_a) != len(ids_b):
        raise ValueError(f"different request counts: {len(ids_a)} vs {len(ids_b)}")
    divergences: list[Divergence] = []
    delta = 0.0
    identical = 0
    for i, (a, b) in enumerate(zip(ids_a, ids_b)):
        first = next((p for p, (x, y) in enumerate(zip(a, b)) if x != y), None)
        if first is None and len(a) != len(b):
            first = min(len(a), len(b))
        agreed = len(a) if first is None else first
        for p in range(agreed):
            delta = max(delta, abs(ref["logprobs"][i][p] - other["logprobs"][i][p]))
        if first is None:
            identical += 1
            continue
        if first >= min(len(a), len(b)):
            raise ValueError(f"request {i}: runs of different lengths ({len(a)} vs {len(b)})")
        top = {int(t): lp for t, lp in ref["top"][i][first].items()}
        own = ref["logprobs"][i][first]
        other_lp = top.get(b[first])
        divergences.append(
            Divergence(
                request=i,
                position=first,
                ref_token=a[first],
                other_token=b[first],
                gap=None if other_lp is None else own - other_lp,
                gap_floor=own - min(top.values()),
            )
        )
    return Comparison(len(ids_a), identical, tuple(divergences), delta)
