"""The speculator's cost rule (``spec_dec/draft_gate.py``) in simulated engines.

Each simulation is an engine whose steps take a known time and yield a known
number of tokens, with and without drafts, driven through the gate with a fake
clock: the gate must settle on the faster choice, keep only its probe share of
the other, follow a change of regime, keep batch sizes apart, and not be
misled by idle gaps; with hybrid's three choices it must settle on the fastest
and probe the other two in turn.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from arctic_inference.vllm.spec_dec.draft_gate import DraftGate, StepRate, batch_bucket
from tests.spec_dec.conftest import ManualClock


def simulate_choices(
    gate: DraftGate,
    clock: ManualClock,
    steps: int,
    step: Callable[[int, int], tuple[float, int]],
    batch: Callable[[int], int] = lambda i: 1,
    arrivals: Callable[[int], int] = lambda i: 0,
) -> list[tuple[int, int]]:
    """Run ``steps`` steps: ``step(i, choice)`` gives (seconds, tokens) of the step the
    gate's choice shaped; ``arrivals(i)`` the requests new to the batch at step ``i``.
    Returns (batch size, choice) per step."""
    decisions = []
    tokens = 0
    for i in range(steps):
        size = batch(i)
        choice = gate.choose(tokens, size, arrivals(i))
        decisions.append((size, choice))
        seconds, tokens = step(i, choice)
        clock.now += seconds
    return decisions


def simulate(
    gate: DraftGate,
    clock: ManualClock,
    steps: int,
    step: Callable[[int, bool], tuple[float, int]],
    batch: Callable[[int], int] = lambda i: 1,
    arrivals: Callable[[int], int] = lambda i: 0,
) -> list[tuple[int, bool]]:
    """A two-choice gate: ``step(i, drafted)``; returns (batch size, drafted) per step."""
    runs = simulate_choices(gate, clock, steps, lambda i, c: step(i, c == 0), batch, arrivals)
    return [(size, choice == 0) for size, choice in runs]


def engine(
    draft_seconds: float, draft_tokens: float, rng: random.Random, jitter: float = 0.1
) -> Callable[[int, bool], tuple[float, int]]:
    """A plain step takes 1 s (±jitter) and yields 1 token; a drafting step takes
    ``draft_seconds`` and yields 1 token plus, on average, ``draft_tokens - 1``."""

    def step(i: int, drafted: bool) -> tuple[float, int]:
        noise = 1 + rng.uniform(-jitter, jitter)
        if not drafted:
            return noise, 1
        extra = draft_tokens - 1
        accepted = int(extra) + (rng.random() < extra - int(extra))
        return draft_seconds * noise, 1 + accepted

    return step


def drafted_share(decisions: list[tuple[int, bool]], size: int | None = None) -> float:
    mine = [d for s, d in decisions if size is None or s == size]
    assert mine, "no steps of that batch size"
    return sum(mine) / len(mine)


def test_drafting_that_pays_keeps_drafting_but_for_the_probes():
    clock = ManualClock()
    gate = DraftGate(clock=clock, probe_backoff=0)
    # x1.9 the tokens for x1.2 the time: drafting is worth x1.6.
    decisions = simulate(gate, clock, 640, engine(1.2, 1.9, random.Random(0)))
    share = drafted_share(decisions[64:])
    assert 0.9 <= share <= 1 - 4 / 64 + 0.01


def test_drafting_that_fails_stops_but_for_the_probes():
    clock = ManualClock()
    gate = DraftGate(clock=clock, probe_backoff=0)
    # 2 % of three drafted tokens accepted for 30 % more time: the small-llama case.
    decisions = simulate(gate, clock, 640, engine(1.3, 1.06, random.Random(1)))
    assert drafted_share(decisions[128:]) <= 4 / 64 + 0.01


@pytest.mark.parametrize(
    ("draft_seconds", "draft_tokens", "drafts"),
    [(1.2, 1.9, True), (1.3, 1.06, False)],  # the two cases above
    ids=["drafting-pays", "drafting-fails"],
)
def test_a_choice_that_keeps_losing_is_probed_every_eighth_cycle(
    draft_seconds, draft_tokens, drafts
):
    """With the default backoff (3) the losing choice's probes thin out to 4 steps in
    every 8 x 64, but never stop."""
    clock = ManualClock()
    gate = DraftGate(clock=clock)
    rng = random.Random(5)
    decisions = simulate(gate, clock, 64 * 40, engine(draft_seconds, draft_tokens, rng))
    late = decisions[64 * 24 :]  # after the backoff has climbed
    probes = sum(d != drafts for _, d in late)
    assert probes == 4 * len(late) // (64 * 8)  # every 8th cycle, whole probes
    assert gate.backoff[(batch_bucket(1), int(drafts))] == 3
    # the backoff stops there: the same share at the run's very end
    assert sum(d != drafts for _, d in decisions[-64 * 8 :]) == 4


@pytest.mark.parametrize("backoff", [0, 3])
def test_the_gate_follows_a_change_of_regime_both_ways(backoff):
    """Without backoff the gate follows within three probe cycles (the window refills);
    a losing choice probed every 2**backoff cycles is found paying again within two of
    its thinned probes (the first may judge it on what it measured before the change),
    then those three cycles."""
    clock = ManualClock()
    gate = DraftGate(clock=clock, probe_backoff=backoff)
    rng = random.Random(2)
    paying, failing = engine(1.2, 2.5, rng), engine(1.3, 1.0, rng)
    length = 2048
    settle = 64 * (3 + (2 * 2**backoff if backoff else 0))

    def step(i, drafted):
        return (failing if length <= i < 2 * length else paying)(i, drafted)

    decisions = simulate(gate, clock, 3 * length, step)
    assert drafted_share(decisions[100:length]) >= 0.9
    # Drafting that stops paying stops at once: it is the choice measured every step.
    assert drafted_share(decisions[length + 192 : 2 * length]) <= 4 / 64 + 0.01
    assert drafted_share(decisions[2 * length + settle :]) >= 0.9


def test_batch_sizes_are_judged_apart():
    clock = ManualClock()
    gate = DraftGate(clock=clock)
    rng = random.Random(3)
    small, large = engine(1.2, 2.5, rng), engine(1.5, 1.2, rng)
    sizes = [1 if rng.random() < 0.5 else 16 for _ in range(2000)]

    def step(i, drafted):
        return (small if sizes[i] == 1 else large)(i, drafted)

    decisions = simulate(gate, clock, 2000, step, batch=lambda i: sizes[i])
    assert drafted_share(decisions[400:], size=1) >= 0.85
    assert drafted_share(decisions[400:], size=16) <= 0.15


def test_idle_gaps_do_not_count_against_the_choice_they_follow():
    """One request at a time, the engine idles between requests; when those gaps fall on
    plain steps, counting them would make plain steps look slow and keep a failing
    speculator drafting."""
    clock = ManualClock()
    gate = DraftGate(clock=clock)
    base = engine(1.3, 1.0, random.Random(4))
    plain_steps = 0

    def step(i, drafted):
        nonlocal plain_steps
        seconds, tokens = base(i, drafted)
        if not drafted:
            plain_steps += 1
            if plain_steps % 8 == 0:
                seconds += 50.0  # the next request arrives
        return seconds, tokens

    decisions = simulate(gate, clock, 960, step)
    assert drafted_share(decisions[192:]) <= 4 / 64 + 0.01


def test_paused_steps_are_not_measured():
    """A step over the batch cap makes no drafts whatever the gate says; its time must
    not be booked to the choice taken before it."""
    clock = ManualClock()
    gate = DraftGate(clock=clock)
    assert gate.choose(0, 1) == 0
    gate.pause()
    clock.now += 100.0
    assert gate.choose(1, 1) == 0
    assert gate.rates == {}
    clock.now += 1.0
    gate.choose(3, 1)
    assert list(gate.rates) == [(batch_bucket(1), 0)]
    assert gate.rates[(batch_bucket(1), 0)].per_second == pytest.approx(3.0)


def test_step_rate_leaves_out_steps_far_above_the_median():
    rate = StepRate(window=4)
    for seconds in (1.0, 1.0, 1.0, 40.0, 1.0):  # the first falls out of the window
        rate.observe(2, seconds)
    assert rate.observed == 4 and rate.per_second == pytest.approx(2.0)


def test_batch_buckets_are_1_2_3to4_5to8_and_so_on():
    sizes = (1, 2, 3, 4, 5, 8, 9, 16, 17, 32)
    groups: dict[int, list[int]] = {}
    for n in sizes:
        groups.setdefault(batch_bucket(n), []).append(n)
    assert list(groups.values()) == [[1], [2], [3, 4], [5, 8], [9, 16], [17, 32]]


def test_probe_share_must_leave_room_for_the_preferred_choice():
    with pytest.raises(ValueError, match="probe_steps"):
        DraftGate(probe_every=4, probe_steps=4)
    DraftGate(choices=2, probe_every=8, probe_steps=4)  # four steps left
    with pytest.raises(ValueError, match="probe_steps"):  # 2 x 4 probe steps fill all 8
        DraftGate(choices=3, probe_every=8, probe_steps=4)
    with pytest.raises(ValueError, match="two choices"):
        DraftGate(choices=1)


def three_way_engine(
    seconds: tuple[float, float, float], tokens: tuple[float, float, float], rng: random.Random
) -> Callable[[int, int], tuple[float, int]]:
    """Hybrid's choices as an engine: per choice (speculator and suffix, suffix alone,
    nothing) the step's seconds (±10 %) and mean tokens."""

    def step(i: int, choice: int) -> tuple[float, int]:
        mean = tokens[choice]
        return seconds[choice] * (1 + rng.uniform(-0.1, 0.1)), int(mean) + (
            rng.random() < mean - int(mean)
        )

    return step


@pytest.mark.parametrize(
    ("seconds", "tokens", "winner"),
    [
        # Text that repeats, a speculator that helps beyond it: both.
        ((1.3, 1.2, 1.0), (3.0, 2.0, 1.0), 0),
        # Suffix drafts pay, the speculator's only cost: suffix alone.
        ((1.4, 1.2, 1.0), (2.1, 2.0, 1.0), 1),
        # Nothing repeats, nothing is learnt (small-llama): no drafts at all.
        ((1.3, 1.2, 1.0), (1.08, 1.05, 1.0), 2),
    ],
)
def test_hybrids_gate_settles_on_the_fastest_of_three_choices(seconds, tokens, winner):
    clock = ManualClock()
    gate = DraftGate(choices=3, clock=clock)
    runs = simulate_choices(gate, clock, 960, three_way_engine(seconds, tokens, random.Random(7)))
    late = [choice for _, choice in runs[192:]]
    # The winner takes all but the probes (4 steps of each other choice in every 64) and
    # the few steps where noise in a 16-step window puts a probed choice ahead.
    assert late.count(winner) / len(late) >= 1 - 8 / 64 - 0.03
    for other in {0, 1, 2} - {winner}:
        assert 0 < late.count(other) / len(late) <= 4 / 64 + 0.03


def test_with_three_choices_the_probes_take_each_other_choice_in_turn():
    clock = ManualClock()
    gate = DraftGate(choices=3, probe_every=16, probe_steps=2, clock=clock)
    choices = [gate.choose(0, 1) for _ in range(32)]  # no rates: choice 0 is preferred
    assert choices[:16] == [0] * 12 + [1, 1, 2, 2]
    assert choices[16:] == choices[:16]


def test_only_the_last_choice_drafts_nothing():
    assert [DraftGate(choices=3).drafts_nothing(c) for c in range(3)] == [False, False, True]
    assert [DraftGate().drafts_nothing(c) for c in range(2)] == [False, True]


def test_hybrid_backs_off_only_the_choice_that_clearly_loses():
    """Speculator with suffix drafts and suffix drafts alone within a few per cent of
    each other (copy-llama one at a time): the close one stays probed every cycle, so the
    gate can switch between them; no drafts at all, at half their rate, backs off."""
    clock = ManualClock()
    gate = DraftGate(choices=3, clock=clock)
    step = three_way_engine((1.3, 1.2, 1.0), (2.7, 2.45, 1.0), random.Random(8))
    runs = simulate_choices(gate, clock, 64 * 40, step)
    bucket = batch_bucket(1)
    assert gate.backoff[(bucket, 2)] == 3
    late = [choice for _, choice in runs[64 * 24 :]]
    assert late.count(2) == 4 * len(late) // (64 * 8)
    # The drafting choices take the rest, each at least its probe share.
    assert min(late.count(0), late.count(1)) >= 4 * len(late) // 64


def test_backoff_settings_are_checked():
    with pytest.raises(ValueError, match="probe_backoff"):
        DraftGate(probe_backoff=-1)
    with pytest.raises(ValueError, match="backoff_margin"):
        DraftGate(backoff_margin=1.0)
    DraftGate(probe_backoff=0, backoff_margin=0.0)


def test_a_backed_off_choice_that_wins_is_probed_every_cycle_when_it_loses_again():
    clock = ManualClock()
    gate = DraftGate(clock=clock)
    bucket = batch_bucket(1)
    rng = random.Random(9)
    paying, failing = engine(1.2, 2.5, rng), engine(1.3, 1.0, rng)
    simulate(gate, clock, 64 * 24, failing)
    assert gate.backoff[(bucket, 0)] == 3  # drafting lost for long
    simulate(gate, clock, 64 * 24, paying)
    assert (bucket, 0) not in gate.backoff  # drafting won: its backoff is gone
    # Drafting stops paying: as the loser it starts again from probes every cycle, so the
    # three cycles after the switch hold at least two probes (a backoff kept from before
    # would allow one in eight cycles).
    decisions = simulate(gate, clock, 64 * 4, failing)
    assert sum(d for _, d in decisions[64:]) >= 2 * 4


def test_discounted_time_is_left_out_of_the_step_it_was_spent_in():
    clock = ManualClock()
    gate = DraftGate(clock=clock)
    gate.choose(0, 1)
    clock.now += 5.0  # e.g. the suffix trees catching up on deferred steps
    gate.discount(5.0)
    clock.now += 1.0
    gate.choose(2, 1)
    assert gate.rates[(batch_bucket(1), 0)].steps[-1] == (2, pytest.approx(1.0))
    gate.pause()
    gate.discount(3.0)  # no step under way: nothing to discount, no error
    clock.now += 1.0
    gate.choose(2, 1)  # the paused step is still not measured
    assert len(gate.rates[(batch_bucket(1), 0)].steps) == 1


def requests_in_turn(
    gate: DraftGate,
    clock: ManualClock,
    engines: list[Callable[[int, int], tuple[float, int]]],
    length: int,
    report_arrivals: bool = True,
) -> list[list[int]]:
    """One request at a time, each ``length`` steps on its own engine (its text); the
    first step of each reports one arrival (if ``report_arrivals``). Returns each
    request's choices."""
    runs = simulate_choices(
        gate,
        clock,
        len(engines) * length,
        lambda i, choice: engines[i // length](i % length, choice),
        arrivals=lambda i: int(report_arrivals and i % length == 0),
    )
    choices = [choice for _, choice in runs]
    return [choices[k : k + length] for k in range(0, len(choices), length)]


def test_a_new_request_whose_text_repeats_is_drafted_for_at_once():
    """One at a time: after requests whose text does not repeat (no drafts is the best,
    the drafting choices, close behind, are probed every few cycles), a request that
    quotes its context gets drafts within its first probe: the drafting choices' rates
    from the earlier text are stale once a new request arrives."""
    seconds = (1.15, 1.1, 1.0)  # at batch 1 a draft costs the step little

    def run(report_arrivals: bool) -> list[list[int]]:
        rng = random.Random(11)
        plain = three_way_engine(seconds, (1.05, 1.02, 1.0), rng)
        quoting = three_way_engine(seconds, (3.0, 2.8, 1.0), rng)
        clock = ManualClock()
        gate = DraftGate(choices=3, clock=clock)
        return requests_in_turn(gate, clock, [plain] * 4 + [quoting], 256, report_arrivals)

    runs = run(report_arrivals=True)
    assert runs[3].count(2) >= 256 - 64  # no drafts led on the text that does not repeat
    first = runs[4]
    assert first[:8] == [0] * 4 + [1] * 4  # both drafting choices probed at once
    assert first[8:64].count(2) <= 4  # then no drafts only in a probe
    # Without arrivals the same run waits for the thinned probes: the gain is the rule's.
    assert run(report_arrivals=False)[4][:64].count(2) > 16


def test_a_choice_far_behind_is_not_reprobed_by_new_batches():
    """Batch 32 on small-llama: drafting costs a step x2.5 for almost nothing, a third of
    the rate of no drafts; a whole new batch every 128 steps does not bring its probes
    back from every eighth cycle."""
    rng = random.Random(12)
    step = engine(2.5, 1.01, rng)
    clock = ManualClock()
    gate = DraftGate(clock=clock)
    decisions = simulate(
        gate, clock, 64 * 40, step, batch=lambda i: 32, arrivals=lambda i: 32 * (i % 128 == 0)
    )
    late = [drafted for _, drafted in decisions[64 * 24 :]]
    assert sum(late) == 4 * len(late) // (64 * 8)


def _settled_rates(gate: DraftGate, bucket: int, per_second: list[float]) -> None:
    for choice, rate in enumerate(per_second):
        steps = gate.rates[(bucket, choice)] = StepRate(gate.window)
        for _ in range(gate.window):
            steps.observe(1, 1.0 / rate)


def test_half_a_new_batch_is_a_new_regime_and_arrivals_add_up():
    clock = ManualClock()
    gate = DraftGate(choices=3, clock=clock)
    bucket = batch_bucket(32)
    _settled_rates(gate, bucket, [0.8, 0.9, 1.0])  # no drafts leads, both within 25 %

    def step(arrivals: int = 0) -> int:
        clock.now += 1.0  # every step yields one token a second: the rates stay put
        return gate.choose(1, 32, arrivals)

    assert step(arrivals=15) == 2  # 15 of 32 new: the rates still hold
    assert [step() for _ in range(3)] == [2, 2, 2]
    assert step(arrivals=1) == 0  # the 16th: probe at once, the most drafting first
    assert [step() for _ in range(7)] == [0, 0, 0, 1, 1, 1, 1]
    # Measured anew, as fast as no drafts now: the tie goes to drafting the most.
    assert step() == 0 and gate.rates[(bucket, 0)].observed == 4


def test_a_fresh_rate_replaces_the_stale_one_only_once_measured():
    """A new batch's probe cut short (the batch size changed) leaves the stale rate in
    place: a rate short of steps would make the gate fall back to drafting the most."""
    clock = ManualClock()
    gate = DraftGate(choices=2, clock=clock)
    one, two = batch_bucket(1), batch_bucket(2)
    _settled_rates(gate, one, [0.9, 1.0])
    _settled_rates(gate, two, [0.5, 1.0])
    stale = gate.rates[(one, 0)]
    assert gate.choose(0, 1, arrivals=1) == 0  # the probe's first step
    clock.now += 1.0
    assert gate.choose(3, 2) == 1  # two requests now: no drafts, their bucket's best
    assert gate.rates[(one, 0)] is stale  # one fresh step is not a rate
    clock.now += 1.0
    for _ in range(8):  # back at one request: the probe was dropped, the stale rate holds
        assert gate.choose(1, 1) == 1
        clock.now += 1.0
    assert gate.rates[(one, 0)] is stale


def test_a_new_regime_measures_the_probed_choice_afresh():
    clock = ManualClock()
    gate = DraftGate(choices=2, clock=clock)
    bucket = batch_bucket(1)
    _settled_rates(gate, bucket, [0.9, 1.0])
    tokens = 0
    choices = []
    for i in range(5):
        choices.append(gate.choose(tokens, 1, arrivals=int(i == 0)))
        clock.now += 1.0
        tokens = 3  # the new text repeats: three tokens a step
    assert choices == [0] * 5  # four probe steps, then drafting leads on the fresh rate
    fresh = gate.rates[(bucket, 0)]
    assert fresh.observed == 4 and fresh.per_second == pytest.approx(3.0)


def test_regime_margin_is_checked():
    with pytest.raises(ValueError, match="regime_margin"):
        DraftGate(regime_margin=1.0)
    DraftGate(regime_margin=0.0)


def test_evidence_reprobes_a_choice_far_behind_at_once_and_measures_it_afresh():
    """Suffix drafts lost by half while the text did not repeat; the trees say it repeats
    again: the gate probes them at once, whatever the margin, and takes their new rate."""
    clock = ManualClock()
    gate = DraftGate(choices=3, clock=clock)
    bucket = batch_bucket(1)
    _settled_rates(gate, bucket, [0.4, 0.5, 1.0])
    assert gate.reconsider(1, [1])
    choices, tokens = [], 0
    for _ in range(6):
        choices.append(gate.choose(tokens, 1))
        clock.now += 1.0
        tokens = 3 if choices[-1] == 1 else 1  # the text repeats: suffix drafts pay
    assert choices == [1] * 6  # four probe steps, then suffix leads on its fresh rate
    assert gate.rates[(bucket, 1)].per_second == pytest.approx(3.0)


def test_evidence_leaves_the_best_and_the_choices_drafting_less_alone():
    clock = ManualClock()
    gate = DraftGate(choices=3, clock=clock)
    _settled_rates(gate, batch_bucket(1), [0.5, 1.0, 0.9])  # suffix alone leads
    assert not gate.reconsider(1, [1, 2])
    clock.now += 1.0
    assert gate.choose(1, 1) == 1


def test_evidence_waits_for_a_probe_already_under_way():
    """A new request's probe is measuring suffix drafts afresh: evidence adds nothing,
    and must not restart that measurement or queue a second probe."""
    clock = ManualClock()
    gate = DraftGate(choices=3, clock=clock)
    _settled_rates(gate, batch_bucket(1), [0.8, 0.9, 1.0])
    seconds = (1.25, 1.1, 1.0)  # one token a step: the settled rates hold
    choices = [gate.choose(1, 1, arrivals=1)]  # the new request's probes begin
    assert gate.reconsidering(1, [1]) == [] and not gate.reconsider(1, [1])
    for _ in range(8):
        clock.now += seconds[choices[-1]]
        choices.append(gate.choose(1, 1))
    assert choices == [0] * 4 + [1] * 4 + [2]  # one probe each, then no drafts leads


def test_evidence_that_keeps_being_wrong_waits_twice_as_long_each_time():
    clock = ManualClock()
    gate = DraftGate(choices=3, evidence_cooldown=4, clock=clock)
    bucket = batch_bucket(1)
    _settled_rates(gate, bucket, [0.4, 0.5, 1.0])

    def steps_until_accepted() -> int:
        """Ordinary steps (the evidence's probes run first) until evidence is taken again;
        suffix drafts keep yielding half the rate of no drafts."""
        n = 0
        while not gate.reconsider(1, [1]):
            choice = gate.choose(1, 1)
            clock.now += 2.0 if choice == 1 else 1.0
            n += 1
        return n

    assert steps_until_accepted() == 0
    waits = [steps_until_accepted() for _ in range(4)]
    # Each wait: the four probe steps the evidence queued, then a cooldown of 4, 8, 16,
    # 32 ordinary steps.
    assert waits == [4 + 4, 4 + 8, 4 + 16, 4 + 32]
    # The last evidence was right: its probes find suffix drafts fast, suffix leads, and
    # the cooldown starts over from the shortest.
    tokens = 1
    for _ in range(gate.probe_steps + 1):
        gate.choose(tokens, 1)
        clock.now += 1.0
        tokens = 4
    assert gate.best(bucket) == 1
    _settled_rates(gate, bucket, [0.4, 0.5, 1.0])  # then the text stops repeating
    steps_until_accepted()  # the cooldown set last time still runs out
    assert steps_until_accepted() == 4 + 4


def test_evidence_cooldown_is_checked():
    with pytest.raises(ValueError, match="evidence_cooldown"):
        DraftGate(evidence_cooldown=0)


def test_evidence_brings_drafts_back_within_a_request():
    """One request at a time whose text stops repeating for a stretch, then repeats again.
    Told by the suffix trees that it repeats, the gate drafts again at the next step; on
    the rates alone it waits for the probe of suffix drafts, thinned while they lost."""
    seconds = (1.6, 1.5, 1.0)  # one at a time a suffix step costs about x1.5 a plain one

    def run(evidence: bool) -> list[int]:
        rng = random.Random(13)
        plain = three_way_engine(seconds, (1.05, 1.0, 1.0), rng)  # drafts fail
        quoting = three_way_engine(seconds, (3.0, 2.9, 1.0), rng)
        clock = ManualClock()
        gate = DraftGate(choices=3, clock=clock)
        choices, tokens = [], 0
        for i in range(768):
            repeats = not 256 <= i < 512
            choice = gate.choose(tokens, 1)
            choices.append(choice)
            step_seconds, tokens = (quoting if repeats else plain)(i, choice)
            clock.now += step_seconds
            if evidence and repeats and gate.drafts_nothing(choice):
                gate.reconsider(1, [1])
        return choices

    told = run(evidence=True)
    assert told[256:512].count(2) >= 3 * 256 // 4  # no drafts led while nothing repeated
    assert told[513:517] == [1] * 4  # the step after the text repeats: suffix drafts probed
    assert told[517:576].count(2) <= 4  # then no drafts only in a probe
    assert run(evidence=False)[512:576].count(2) > 16
