"""The arctic proposer and the runner patch on the CPU, with the real vLLM objects.

Real: the ``VllmConfig`` with the arctic ``SpeculativeConfig`` (built and
validated by vLLM with the patch in), the speculator loaded by vLLM's model
loader from a tiny checkpoint, vLLM's ``InputBatch`` on the CPU (the suffix
tests' runner stand-in writes each step's sampled ids the way the model
runner's bookkeeping does), ``SpecDecodeMetadata`` and the real
``GPUModelRunner`` class (an instance made without its GPU-only ``__init__``).
"""

from __future__ import annotations

import pytest
import torch

from tests.spec_dec.conftest import HIDDEN, VOCAB, ManualClock, make_spec_ckpt
from tests.spec_dec.test_spec_config import target, target_config  # noqa: F401 (fixtures)
from tests.suffix.test_vllm_proposer import Runner

pytestmark = pytest.mark.usefixtures("registered", "one_rank_group")


@pytest.fixture
def arctic(reverted_patches):
    from arctic_inference.vllm.spec_dec.spec_config import (
        SpeculativeConfigArcticPatch,
        extend_speculative_config,
    )

    SpeculativeConfigArcticPatch.apply()
    extend_speculative_config()


@pytest.fixture(scope="module")
def lstm(spec_root):
    return make_spec_ckpt(spec_root, "prop-lstm", kind="lstm")


@pytest.fixture
def make_proposer(arctic, target_config, lstm):  # noqa: F811
    from vllm.config import DeviceConfig, ParallelConfig, SpeculativeConfig, VllmConfig

    from arctic_inference.vllm.spec_dec.proposer import ArcticProposer

    def make(**spec):
        spec_cfg = SpeculativeConfig(
            method="arctic",
            model=str(lstm),
            target_model_config=target_config,
            target_parallel_config=ParallelConfig(),
            **spec,
        )
        cfg = VllmConfig(
            model_config=target_config,
            speculative_config=spec_cfg,
            device_config=DeviceConfig(device="cpu"),
        )
        proposer = ArcticProposer(cfg, torch.device("cpu"))
        proposer.load_model(None)
        return proposer

    return make


def _batch(monkeypatch, prompts: dict[str, list[int]], max_len: int = 256) -> Runner:
    runner = Runner(monkeypatch, max_len=max_len)
    runner.batch.vocab_size = VOCAB
    for req_id, prompt in prompts.items():
        runner.add(req_id, prompt)
    return runner


def test_drafts_read_the_row_of_each_requests_last_sampled_token(make_proposer, monkeypatch):
    from vllm.v1.spec_decode.metadata import SpecDecodeMetadata

    proposer = make_proposer(num_speculative_tokens=3)
    runner = _batch(monkeypatch, {"a": [1, 2, 3], "b": [4, 5], "c": [6, 7, 8, 9]})
    # Last step verified drafts of 3, 0 and 2 tokens: rows a0..a3 | b0 | c0..c2.
    meta = SpecDecodeMetadata.make_dummy([[11, 12, 13], [], [14, 15]], device=torch.device("cpu"))
    sampled = runner.step({"a": [21, 22], "b": [23], "c": [24, 25, 26]})
    hidden = torch.randn(4 + 1 + 3, HIDDEN, generator=torch.Generator().manual_seed(0)) * 3
    drafts = proposer.propose(sampled, hidden, meta, runner.batch)

    # a accepted one draft (row 1), b none (row 4), c both (row 7).
    expected = proposer.model.generate_proposals(
        torch.tensor([22, 23, 26]), hidden[[1, 4, 7]], 3
    ).tolist()
    assert drafts == expected
    assert all(len(d) == 3 for d in drafts)


def test_partial_prefill_and_context_limit(make_proposer, monkeypatch):
    proposer = make_proposer(num_speculative_tokens=4)
    runner = _batch(monkeypatch, {"a": [1] * 250, "b": [2, 3], "c": [4] * 10}, max_len=256)
    sampled = runner.step({"a": [5, 6], "c": [7]})  # b is still prefilling: nothing sampled
    hidden = torch.randn(3, HIDDEN)
    drafts = proposer.propose(sampled, hidden, None, runner.batch)
    # a has 252 tokens of 256: room for 3 drafts (the last slot is the bonus token).
    assert [len(d) for d in drafts] == [3, 0, 4]


def test_disable_by_batch_size_turns_drafting_off(make_proposer, monkeypatch):
    proposer = make_proposer(num_speculative_tokens=3, disable_by_batch_size=3)
    runner = _batch(monkeypatch, {"a": [1, 2], "b": [3, 4], "c": [5, 6]})
    sampled = runner.step({"a": [7], "b": [8], "c": [9]})
    assert proposer.propose(sampled, torch.randn(3, HIDDEN), None, runner.batch) == [[], [], []]
    runner.remove("c")
    sampled = runner.step({"a": [10], "b": [11]})
    assert [
        len(d) for d in proposer.propose(sampled, torch.randn(2, HIDDEN), None, runner.batch)
    ] == [3, 3]


def test_a_cap_of_one_never_drafts_even_for_one_request(make_proposer, monkeypatch):
    """The bench's never-drafting engine (``disable_by_batch_size=1``): a config vLLM
    accepts, and a proposer that drafts nothing for a lone request, step after step."""
    proposer = make_proposer(num_speculative_tokens=3, disable_by_batch_size=1)
    runner = _batch(monkeypatch, {"a": [1, 2]})
    for token in (7, 8, 9):
        sampled = runner.step({"a": [token]})
        assert proposer.propose(sampled, torch.randn(1, HIDDEN), None, runner.batch) == [[]]
    assert proposer.timing["calls"] == 3


def test_hybrid_takes_suffix_drafts_where_the_text_repeats(make_proposer, monkeypatch):
    proposer = make_proposer(enable_suffix_decoding=True, num_speculative_tokens=8)
    assert proposer.hybrid is not None and proposer.num_draft_tokens == 3
    loop = [30, 31, 32, 33, 34, 35, 36, 37]
    runner = _batch(monkeypatch, {"rep": loop * 4, "new": [90, 91, 92, 93]})
    sampled = runner.step({"rep": [30], "new": [94]})
    drafts = proposer.propose(sampled, torch.randn(2, HIDDEN), None, runner.batch)
    # The repeating prompt continues its loop for the full suffix length; the fresh one
    # has no match and takes the speculator's three tokens.
    assert drafts[0] == loop[1:] + [30]
    assert len(drafts[1]) == 3 and proposer.hybrid.last_source == {"rep": "suffix", "new": "arctic"}


def test_hybrid_runs_the_speculator_only_for_requests_that_take_its_draft(
    make_proposer, monkeypatch
):
    proposer = make_proposer(enable_suffix_decoding=True, num_speculative_tokens=8)
    batches: list[list[int]] = []
    real = proposer.model.generate_proposals

    def counted(tokens, hidden, n):
        batches.append(tokens.tolist())
        return real(tokens, hidden, n)

    monkeypatch.setattr(proposer.model, "generate_proposals", counted)
    loop = [30, 31, 32, 33, 34, 35, 36, 37]
    runner = _batch(monkeypatch, {"r1": loop * 4, "r2": [40, 41] + loop * 3})
    sampled = runner.step({"r1": [30], "r2": [30]})
    drafts = proposer.propose(sampled, torch.randn(2, HIDDEN), None, runner.batch)
    # Both repeat: suffix wins everywhere and the speculator does not run at all.
    assert [len(d) for d in drafts] == [8, 8] and batches == []
    runner.add("fresh", [90, 91, 92, 93])
    sampled = runner.step({"r1": [31], "r2": [31], "fresh": [94]})
    drafts = proposer.propose(sampled, torch.randn(3, HIDDEN), None, runner.batch)
    # Only the fresh request takes a speculator draft: one call, for that request alone.
    assert batches == [[94]] and len(drafts[2]) == 3
    assert proposer.hybrid.last_source == {"r1": "suffix", "r2": "suffix", "fresh": "arctic"}


def test_hybrid_over_the_batch_cap_drafts_nothing_and_skips_the_tree_lookups(
    make_proposer, monkeypatch
):
    proposer = make_proposer(
        enable_suffix_decoding=True, num_speculative_tokens=8, disable_by_batch_size=2
    )
    lookups: list[tuple[str, list[int]]] = []
    real = proposer.hybrid.cache.speculate

    def counted(req_id, *args, **kwargs):
        draft = real(req_id, *args, **kwargs)
        lookups.append((req_id, list(draft.token_ids)))
        return draft

    monkeypatch.setattr(proposer.hybrid.cache, "speculate", counted)
    runner = _batch(monkeypatch, {"a": [1, 2, 3], "b": [40, 41]})
    sampled = runner.step({"a": [5], "b": [42]})
    assert proposer.propose(sampled, torch.randn(2, HIDDEN), None, runner.batch) == [[], []]
    assert lookups == [] and proposer.hybrid.chosen["none"] == 2
    runner.remove("b")
    proposer.propose(runner.step({"a": [6]}), torch.randn(1, HIDDEN), None, runner.batch)
    proposer.propose(runner.step({"a": [5]}), torch.randn(1, HIDDEN), None, runner.batch)
    # "5" was followed by "6" only in the capped step: the tree learnt it there.
    assert [req for req, _ in lookups] == ["a", "a"] and lookups[-1][1][:1] == [6]


def test_hybrid_learns_the_speculators_acceptance(make_proposer, monkeypatch):
    from vllm.v1.spec_decode.metadata import SpecDecodeMetadata

    proposer = make_proposer(enable_suffix_decoding=True, num_speculative_tokens=8)
    runner = _batch(monkeypatch, {"x": [50, 51, 52, 53]})
    sampled = runner.step({"x": [54]})
    (draft,) = proposer.propose(sampled, torch.randn(1, HIDDEN), None, runner.batch)
    assert proposer.hybrid.last_source["x"] == "arctic" and proposer.hybrid.arctic.expected == 3.0
    # The verifier accepted none of the three drafts: only the correction token came back.
    meta = SpecDecodeMetadata.make_dummy([draft], device=torch.device("cpu"))
    sampled = runner.step({"x": [60]})
    proposer.propose(sampled, torch.randn(4, HIDDEN), meta, runner.batch)
    assert proposer.hybrid.arctic.expected == 0.0


@pytest.mark.parametrize(
    "score, length, expected, arctic_ok, source",
    [
        (3.5, 6, 3.0, True, "suffix"),
        (2.0, 6, 3.0, True, "arctic"),
        (2.0, 6, 3.0, False, "suffix"),
        (9.0, 0, 3.0, True, "arctic"),
        (0.0, 0, 3.0, False, "none"),
    ],
)
def test_pick_source(score, length, expected, arctic_ok, source):
    from arctic_inference.vllm.spec_dec.hybrid import pick_source

    assert pick_source(score, length, expected, arctic_ok) == source


def test_cost_rule_stops_a_speculator_whose_drafts_all_fail(make_proposer, monkeypatch):
    """Drafting steps take 30 % longer and no draft is accepted: after a few probe cycles
    the proposer drafts only in the gate's probe steps (those of each cycle, and four at
    each new request: drafting is within the gate's regime margin of not drafting), and
    counts the steps it held back."""
    proposer = make_proposer(num_speculative_tokens=3)
    assert proposer.gate is not None  # on unless disable_by_cost=False
    clock = proposer.gate.clock = ManualClock()  # moved by each step's time
    runner = _batch(monkeypatch, {"r0": [1, 2, 3]})
    drafted = []
    for i in range(320):
        if i and i % 80 == 0:  # one request at a time, each well inside the context
            runner.remove(f"r{i // 80 - 1}")
            runner.add(f"r{i // 80}", [1, 2, 3])
            runner.batch.refresh_metadata()  # the runner's end of a step's state update
        # Only the correction token comes back.
        sampled = runner.step({f"r{i // 80}": [4 + i % 50]})
        (draft,) = proposer.propose(sampled, torch.randn(1, HIDDEN), None, runner.batch)
        drafted.append(bool(draft))
        clock.now += 1.3 if draft else 1.0
    late = drafted[128:]  # three probe cycles and the requests arriving at 160 and 240
    assert sum(late) <= 3 * 4 + 2 * 4
    assert drafted[160:164] == [True] * 4  # the new request's probe, at once
    # At most the first cycle (64 steps: drafting until plain steps are measured), four
    # probe steps in each of the other four and four at each of the three new requests.
    assert proposer.timing["withheld"] == drafted.count(False) >= 320 - 64 - 4 * 4 - 3 * 4


def test_without_the_cost_rule_the_speculator_drafts_every_step(make_proposer, monkeypatch):
    proposer = make_proposer(num_speculative_tokens=3, disable_by_cost=False)
    assert proposer.gate is None
    runner = _batch(monkeypatch, {"a": [1, 2, 3]})
    for i in range(80):
        sampled = runner.step({"a": [4 + i % 50]})
        (draft,) = proposer.propose(sampled, torch.randn(1, HIDDEN), None, runner.batch)
        assert len(draft) == 3
    assert proposer.timing["withheld"] == 0


class _RankOfTwo:
    """A TP group seen from one rank: ``broadcast`` delivers rank 0's flag. (The real
    broadcast over two gloo ranks is ``test_tp_cpu.py``'s.)"""

    world_size = 2

    def __init__(self, rank: int, rank0_flag: int) -> None:
        self.rank_in_group, self.rank0_flag, self.sent = rank, rank0_flag, []

    def broadcast(self, flag, src=0):
        self.sent.append(int(flag.item()))
        flag.fill_(self.rank0_flag if self.rank_in_group != 0 else flag.item())
        return flag


def test_under_tensor_parallelism_rank_0s_gate_chooses_for_every_rank(make_proposer, monkeypatch):
    proposer = make_proposer(num_speculative_tokens=3)
    runner = _batch(monkeypatch, {"a": [1, 2, 3]})

    def must_not_decide(*args):
        raise AssertionError("a rank other than 0 consulted its own gate")

    # Rank 1: its clock is not consulted, rank 0's choice 1 (no drafts) holds.
    proposer.tp_group = _RankOfTwo(rank=1, rank0_flag=1)
    proposer.gate.choose = must_not_decide
    sampled = runner.step({"a": [4]})
    assert proposer.propose(sampled, torch.randn(1, HIDDEN), None, runner.batch) == [[]]
    assert proposer.timing["withheld"] == 1
    # Rank 0: its own gate chooses (0, drafting, with nothing measured yet) and sends it.
    del proposer.gate.choose
    proposer.tp_group = group = _RankOfTwo(rank=0, rank0_flag=1)
    sampled = runner.step({"a": [5]})
    (draft,) = proposer.propose(sampled, torch.randn(1, HIDDEN), None, runner.batch)
    assert len(draft) == 3 and group.sent == [0]


def _gate_preferring(proposer, fastest: int, sizes=(1, 2, 3)) -> None:
    """Give the proposer's gate measured rates under which choice ``fastest`` wins."""
    from arctic_inference.vllm.spec_dec.draft_gate import StepRate, batch_bucket

    for size in sizes:
        for choice in range(proposer.gate.choices):
            rate = proposer.gate.rates[(batch_bucket(size), choice)] = StepRate()
            for _ in range(8):
                rate.observe(1, 1.0 if choice == fastest else 1.5)


LOOP = [30, 31, 32, 33, 34, 35, 36, 37]  # the repeating request's text


def _hybrid_step(make_proposer, monkeypatch, fastest: int):
    """One hybrid step, a repeating and a new request, under a gate preferring
    ``fastest``: (drafts, the speculator's plans, proposer)."""
    proposer = make_proposer(enable_suffix_decoding=True, num_speculative_tokens=8)
    assert proposer.gate is not None and proposer.gate.choices == 3
    _gate_preferring(proposer, fastest)
    calls = []
    monkeypatch.setattr(proposer, "propose_arctic", lambda plan, *a: calls.append(plan) or {})
    runner = _batch(monkeypatch, {"rep": LOOP * 4, "new": [90, 91, 92, 93]})
    sampled = runner.step({"rep": [30], "new": [94]})
    return proposer.propose(sampled, torch.randn(2, HIDDEN), None, runner.batch), calls, proposer


def test_hybrid_under_the_cost_rule_can_keep_suffix_drafts_and_drop_the_speculators(
    make_proposer, monkeypatch
):
    drafts, calls, proposer = _hybrid_step(make_proposer, monkeypatch, fastest=1)
    assert drafts == [LOOP[1:] + [30], []]
    # The speculator did not run: the gate emptied its plan.
    assert calls == [] and proposer.timing["withheld"] == 1
    assert proposer.timing["undrafted"] == 0
    assert proposer.hybrid.last_source == {"rep": "suffix", "new": "none"}


def test_hybrid_under_the_cost_rule_can_drop_every_draft(make_proposer, monkeypatch):
    """Where no draft pays (the text does not repeat, the speculator is wrong), plain
    steps are the fastest choice: not even the repeating request gets its suffix draft,
    and the suffix tree still takes the step's tokens (deferred, as over the batch cap;
    at a batch this small the check for repeating text hands them over at once)."""
    drafts, calls, proposer = _hybrid_step(make_proposer, monkeypatch, fastest=2)
    assert drafts == [[], []] and calls == []
    assert proposer.timing["withheld"] == 1 and proposer.timing["undrafted"] == 1
    assert proposer.hybrid.last_source == {"rep": "none", "new": "none"}
    assert proposer.hybrid.follow.pending == {}
    assert {"rep", "new"} <= set(proposer.hybrid.cache.active_requests)


def test_the_catch_up_after_undrafted_steps_is_not_booked_to_the_drafting_step(
    make_proposer, monkeypatch
):
    """Steps without drafts defer the suffix trees' work; the drafting step after them
    does it, and the cost rule must not count that time as the drafting choice's (it
    made drafting look slow: hybrid drafted nothing on 76 % of its steps at batch 32 on
    copy-llama where suffix decoding alone ran x1.36)."""
    from arctic_inference.vllm.spec_dec import proposer as proposer_module
    from arctic_inference.vllm.spec_dec.draft_gate import batch_bucket

    # A batch of two over the check for repeating text: the trees' work waits.
    monkeypatch.setattr(proposer_module, "REPEAT_CHECK_MAX_BATCH", 1)
    proposer = make_proposer(enable_suffix_decoding=True, num_speculative_tokens=8)
    gate, hybrid = proposer.gate, proposer.hybrid
    clock = gate.clock = ManualClock()
    real_catch_up = hybrid.follow.catch_up

    def slow_catch_up(input_batch):
        if hybrid.follow.pending:  # with nothing pending it returns at once
            clock.now += 5.0
        return real_catch_up(input_batch)

    monkeypatch.setattr(hybrid.follow, "catch_up", slow_catch_up)
    runner = _batch(monkeypatch, {"rep": LOOP * 4, "new": [90, 91, 92, 93]})

    def step(sampled: dict[str, list[int]]) -> list[list[int]]:
        return proposer.propose(runner.step(sampled), torch.randn(2, HIDDEN), None, runner.batch)

    _gate_preferring(proposer, fastest=2)  # no drafts: the step's tokens wait
    assert step({"rep": [30], "new": [94]}) == [[], []] and hybrid.follow.pending
    clock.now += 1.0
    _gate_preferring(proposer, fastest=1)  # suffix drafts alone now win
    drafts = step({"rep": [31], "new": [95]})
    assert drafts[0] and hybrid.follow.pending == {}  # caught up (5 s), then drafted
    clock.now += 1.0  # the drafting step's own time
    step({"rep": [32], "new": [96]})
    assert gate.rates[(batch_bucket(2), 1)].steps[-1][1] == pytest.approx(1.0)


def _hybrid_without_drafts(make_proposer, monkeypatch, prompts: dict[str, list[int]]):
    """A hybrid proposer whose gate holds "no drafts" as the best, on a batch of
    ``prompts``; returns (proposer, step), ``step(token)`` sampling ``token`` for every
    request and returning the drafts."""
    proposer = make_proposer(enable_suffix_decoding=True, num_speculative_tokens=8)
    _gate_preferring(proposer, fastest=2, sizes=(1, 2, 3, 5))
    monkeypatch.setattr(proposer, "propose_arctic", lambda plan, *a: {})
    runner = _batch(monkeypatch, prompts)

    def step(token: int) -> list[list[int]]:
        sampled = runner.step({req_id: [token] for req_id in prompts})
        return proposer.propose(sampled, torch.randn(len(prompts), HIDDEN), None, runner.batch)

    return proposer, step


def test_hybrid_without_drafts_drafts_again_once_the_text_repeats(make_proposer, monkeypatch):
    """Inside a request the text can start repeating while the rule holds every draft
    back; the suffix trees see it, and the next step drafts (one at a time on
    copy-llama hybrid drafted nothing on 21 % of its steps where suffix decoding alone
    drafted on all)."""
    proposer, step = _hybrid_without_drafts(make_proposer, monkeypatch, {"rep": LOOP * 4})
    assert step(30) == [[]]  # no drafts, but the trees promise a long accepted draft
    assert proposer.hybrid.follow.pending == {}  # brought up to date to ask them
    assert step(31) == [LOOP[2:] + LOOP[:2]]  # the rule probes suffix drafts at once
    assert proposer.timing["undrafted"] == 1


def test_hybrid_without_drafts_stays_so_where_nothing_repeats(make_proposer, monkeypatch):
    proposer, step = _hybrid_without_drafts(make_proposer, monkeypatch, {"new": [90, 91, 92]})
    assert [step(t) for t in (93, 94, 95)] == [[[]]] * 3
    assert proposer.timing["undrafted"] == 3


def test_a_token_seen_once_before_is_not_taken_for_repeating_text(make_proposer, monkeypatch):
    """After ``90`` recurs, the trees draft ``91`` (what followed it once) and score it
    1.0; on text that does not repeat that happens on about half of all steps
    (bench/spec/repeat_check_cost.py), so one such token must not bring drafts back."""
    proposer, step = _hybrid_without_drafts(make_proposer, monkeypatch, {"new": [90, 91, 92]})
    promised = []
    real_promise = proposer.hybrid.promise

    def recorded(*args):
        promised.append(real_promise(*args))
        return promised[-1]

    monkeypatch.setattr(proposer.hybrid, "promise", recorded)
    assert step(93) == [[]]
    assert step(90) == [[]]  # the context ends in 90: the trees draft 91, score 1.0
    assert step(94) == [[]]  # still no drafts: not re-probed on that evidence
    assert promised == [0.0, pytest.approx(1.0), 0.0]
    assert proposer.timing["undrafted"] == 3


def test_a_large_batch_without_drafts_is_not_checked_for_repeats(make_proposer, monkeypatch):
    """Above REPEAT_CHECK_MAX_BATCH the trees keep deferring their work (it costs a large
    batch twice the host time) and the rule waits for its probes or a new batch."""
    from arctic_inference.vllm.spec_dec.proposer import REPEAT_CHECK_MAX_BATCH

    prompts = {f"rep{k}": LOOP * 4 for k in range(REPEAT_CHECK_MAX_BATCH + 1)}
    proposer, step = _hybrid_without_drafts(make_proposer, monkeypatch, prompts)
    assert step(30) == [[]] * len(prompts) and proposer.hybrid.follow.pending
    assert step(31) == [[]] * len(prompts)


def test_a_probe_of_no_drafts_does_not_look_for_repeats(make_proposer, monkeypatch):
    """Where suffix drafts lead and this step only probes "no drafts", there is nothing
    to bring back."""
    proposer, step = _hybrid_without_drafts(make_proposer, monkeypatch, {"rep": LOOP * 4})
    _gate_preferring(proposer, fastest=1)
    monkeypatch.setattr(proposer.gate, "choose", lambda *a: 2)  # this step: the probe

    def must_not_look(*a):
        raise AssertionError("a probe of no drafts asked the trees")

    monkeypatch.setattr(proposer.hybrid, "promise", must_not_look)
    assert step(30) == [[]]


@pytest.mark.parametrize(("promise", "booked"), [(2.0, 1.0), (0.5, 6.0)])
def test_the_repeat_check_is_booked_to_no_drafts_unless_it_leads_to_drafts(
    make_proposer, monkeypatch, promise, booked
):
    """The check's work is the catch-up the next drafting step would do: left out of
    the step without drafts when it leads to a probe, and counted as that step's cost
    when it does not."""
    from arctic_inference.vllm.spec_dec.draft_gate import batch_bucket

    proposer, step = _hybrid_without_drafts(make_proposer, monkeypatch, {"rep": LOOP * 4})
    clock = proposer.gate.clock = ManualClock()

    def slow_promise(*args):
        clock.now += 5.0
        return promise

    monkeypatch.setattr(proposer.hybrid, "promise", slow_promise)
    step(30)
    clock.now += 1.0  # the rest of the step without drafts
    step(31)
    assert proposer.gate.rates[(batch_bucket(1), 2)].steps[-1] == (1, pytest.approx(booked))


def test_hybrid_under_the_cost_rule_drafts_with_both_where_that_pays(make_proposer, monkeypatch):
    drafts, calls, proposer = _hybrid_step(make_proposer, monkeypatch, fastest=0)
    assert drafts[0] == LOOP[1:] + [30]
    # The speculator was asked for the request the suffix tree has nothing for.
    assert [plan.rows for plan in calls] == [[1]]
    assert proposer.timing["withheld"] == 0 and proposer.timing["undrafted"] == 0


def _bare_runner(drafter, spec_config, input_batch):
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    runner = GPUModelRunner.__new__(GPUModelRunner)
    runner.speculative_config = spec_config
    runner.drafter = drafter
    runner.input_batch = input_batch
    return runner


def test_runner_patch_hands_arctic_steps_to_the_proposer(make_proposer, monkeypatch):
    from vllm.v1.core.sched.output import SchedulerOutput

    from arctic_inference.vllm.spec_dec.runner import GPUModelRunnerArcticPatch

    GPUModelRunnerArcticPatch.apply()
    proposer = make_proposer(num_speculative_tokens=2)
    batch = _batch(monkeypatch, {"a": [1, 2, 3]})
    sampled = batch.step({"a": [4]})
    runner = _bare_runner(proposer, proposer.speculative_config, batch.batch)
    hidden = torch.randn(1, HIDDEN)
    out = runner.propose_draft_token_ids(
        SchedulerOutput.make_empty(), sampled, None, hidden, hidden, None, None, None, None
    )
    assert out == proposer.model.generate_proposals(torch.tensor([4]), hidden, 2).tolist()


def test_runner_patch_leaves_other_methods_to_vllm(reverted_patches, monkeypatch, target_config):  # noqa: F811
    from vllm.config import DeviceConfig, SpeculativeConfig, VllmConfig
    from vllm.v1.core.sched.output import SchedulerOutput
    from vllm.v1.spec_decode.suffix_decoding import SuffixDecodingProposer

    from arctic_inference.vllm.spec_dec.runner import GPUModelRunnerArcticPatch

    GPUModelRunnerArcticPatch.apply()
    spec = SpeculativeConfig(method="suffix", num_speculative_tokens=4)
    cfg = VllmConfig(
        model_config=target_config,
        speculative_config=spec,
        device_config=DeviceConfig(device="cpu"),
    )
    batch = _batch(monkeypatch, {"a": [7, 8, 9, 7, 8, 9, 7, 8]})
    sampled = batch.step({"a": [9]})
    runner = _bare_runner(SuffixDecodingProposer(cfg), spec, batch.batch)
    sched = SchedulerOutput.make_empty()
    sched.num_spec_tokens_to_schedule = 4
    out = runner.propose_draft_token_ids(sched, sampled, None, None, None, None, None, None, None)
    # The text is 789789789: its suffix 789789 matched at the start continues with 789,
    # and the text ends there.
    assert out == [[7, 8, 9]]


def test_suffix_steps_over_the_batch_cap_make_no_drafts_but_the_cache_follows(
    arctic,
    monkeypatch,
    target_config,  # noqa: F811
):
    """A suffix step with as many requests as ``disable_by_batch_size`` drafts nothing,
    yet the tree learns its tokens: a later step's draft continues a token sampled in the
    capped step, exactly as vLLM's proposer drafts when it ran every step uncapped."""
    from vllm.config import DeviceConfig, SpeculativeConfig, VllmConfig
    from vllm.v1.core.sched.output import SchedulerOutput
    from vllm.v1.spec_decode.suffix_decoding import SuffixDecodingProposer

    from arctic_inference.vllm.spec_dec.runner import GPUModelRunnerArcticPatch

    GPUModelRunnerArcticPatch.apply()

    def runner_for(limit):
        spec = SpeculativeConfig(
            method="suffix", num_speculative_tokens=4, disable_by_batch_size=limit
        )
        cfg = VllmConfig(
            model_config=target_config,
            speculative_config=spec,
            device_config=DeviceConfig(device="cpu"),
        )
        batch = _batch(monkeypatch, {"a": [1, 2, 3], "b": [40, 41]})
        return batch, _bare_runner(SuffixDecodingProposer(cfg), spec, batch.batch)

    sched = SchedulerOutput.make_empty()
    sched.num_spec_tokens_to_schedule = 4

    def steps(limit):
        batch, runner = runner_for(limit)
        propose = lambda s: runner.propose_draft_token_ids(  # noqa: E731
            sched, s, None, None, None, None, None, None, None
        )
        first = propose(batch.step({"a": [5], "b": [42]}))  # two requests: at the cap
        batch.remove("b")
        propose(batch.step({"a": [6]}))
        third = propose(batch.step({"a": [5]}))  # "5" was followed by "6" only in step one
        return first, third, runner.drafter.suffix_cache

    capped_first, capped_third, cache = steps(limit=2)
    free_first, free_third, _ = steps(limit=None)
    assert capped_first == [[], []]
    assert capped_third == free_third and capped_third[0][:1] == [6]
    assert cache.active_requests == {"a"}  # "b" left the batch and was stopped


def test_graphs_follow_the_engines_cuda_graph_setting(make_proposer):
    import copy

    from vllm.config import CUDAGraphMode

    from arctic_inference.vllm.spec_dec.graphs import graphs_wanted

    cfg = make_proposer(num_speculative_tokens=3).vllm_config

    def variant(**parts):
        """A copy of the engine's config with some of its sub-configs' fields changed."""
        out = copy.copy(cfg)
        for part, fields in parts.items():
            sub = copy.copy(getattr(cfg, part))
            for name, value in fields.items():
                object.__setattr__(sub, name, value)
            object.__setattr__(out, part, sub)
        return out

    graphed = {"cudagraph_mode": CUDAGraphMode.FULL_AND_PIECEWISE}
    assert graphs_wanted(variant(compilation_config=graphed))
    assert not graphs_wanted(
        variant(compilation_config=graphed, model_config={"enforce_eager": True})
    )
    assert not graphs_wanted(variant(compilation_config={"cudagraph_mode": CUDAGraphMode.NONE}))
    assert not graphs_wanted(
        variant(compilation_config=graphed, parallel_config={"tensor_parallel_size": 2})
    )
