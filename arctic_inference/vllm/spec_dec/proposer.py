"""The arctic proposer: V1's drafter for ``method="arctic"`` (and its hybrid with suffix decoding).

The model runner calls :meth:`ArcticProposer.propose` after each step's
bookkeeping (see :mod:`.runner`), with the tokens each request sampled this
step and the hidden states of the rows that sampled them. Per request:

* a partial prefill (nothing sampled) or a request at the context limit gets
  no draft;
* the speculator reads the hidden state that produced the request's last
  sampled token and that token, and drafts up to ``arctic_draft_tokens``;
* drafting replays a CUDA graph per padded batch size and draft length where
  the engine uses CUDA graphs (:mod:`.graphs`);
* with ``disable_by_batch_size`` set, a step with that many requests or more
  gets no drafts at all (verification would cost more than it saves);
* under the cost rule (``disable_by_cost``, on unless set false) the
  speculator drafts only while its drafting steps yield more tokens per second
  than plain steps, measured per batch-size bucket (:mod:`.draft_gate`); in
  hybrid mode the rule chooses among the speculator with suffix decoding,
  suffix decoding alone, and no drafts;
* in hybrid mode the suffix cache drafts first, each request takes the draft
  that promises more accepted tokens, and the speculator runs only for the
  requests that take its draft (:mod:`.hybrid`); while the rule holds every
  draft back at a small batch, the suffix trees are asked each step whether
  the text repeats again (:meth:`ArcticProposer._look_for_repeats`).

Drafts are lists of token ids (lengths vary per request), the form the runner
hands to the scheduler for suffix decoding too.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from vllm.logger import init_logger

from arctic_inference.vllm.spec_dec.draft_gate import DraftGate
from arctic_inference.vllm.spec_dec.graphs import GraphedProposals, graphs_wanted
from arctic_inference.vllm.spec_dec.spec_config import (
    arctic_draft_tokens,
    gated_by_cost,
    is_hybrid,
    over_batch_cap,
)

logger = init_logger(f"vllm.{__name__}")

# Hybrid's cost-rule choices: the speculator with suffix drafts, suffix drafts alone, none.
SUFFIX_ALONE = 1
# A suffix draft promising this many accepted tokens per request triples what a step
# without drafts yields; one at a time on copy-llama a suffix step cost about x1.5 of a
# plain one (2.0 against 1.3 ms, bench/spec/RESULTS.md, fourteenth session). One token is
# not evidence: a context whose last token occurred once before gets a one-token draft
# scored 1.0 (one observation, one continuation), which happened on 41.5 % of the steps
# of text that does not repeat (bench/spec/repeat_check_cost.py), two promised tokens on
# 3 %; copied text promises the whole match within a few tokens.
REPEAT_PROMISE = 2.0
# Batches up to this size are checked for repeating text on steps without drafts. Above
# it, keeping the trees fed every step costs a step more host time (bench/spec/
# follow_cost.py), and requests come and go often enough for the new-batch rule.
REPEAT_CHECK_MAX_BATCH = 4


def last_sampled_rows(
    sampled_token_ids: Sequence[Sequence[int]], num_draft_tokens: Sequence[int] | None
) -> list[int]:
    """Row of ``sample_hidden_states`` that produced each request's last sampled token.

    Each request owns ``num_draft + 1`` consecutive rows (one when nothing was
    drafted); of those, the row of its last sampled token is the one after its
    accepted drafts. Requests that sampled nothing get their first row (unused).
    """
    rows: list[int] = []
    offset = 0
    for i, tokens in enumerate(sampled_token_ids):
        n_rows = 1 + (num_draft_tokens[i] if num_draft_tokens is not None else 0)
        rows.append(offset + max(len(tokens), 1) - 1)
        offset += n_rows
    return rows


def shared_choice(choice: int, group: Any, device: torch.device) -> int:
    """Rank 0's ``choice`` on every rank of ``group`` (a vLLM ``GroupCoordinator``)."""
    flag = torch.tensor([int(choice)], dtype=torch.int32, device=device)
    return int(group.broadcast(flag, src=0).item())


@dataclasses.dataclass
class DraftPlan:
    """Which requests the speculator drafts for this step, and how far."""

    rows: list[int]  # request indices in the batch
    lengths: list[int]  # tokens each may draft (>= 1)

    @property
    def max_len(self) -> int:
        return max(self.lengths, default=0)

    def only(self, rows: Sequence[int]) -> DraftPlan:
        """The same plan for a subset of its requests."""
        keep = set(rows)
        kept = [(r, n) for r, n in zip(self.rows, self.lengths) if r in keep]
        return DraftPlan([r for r, _ in kept], [n for _, n in kept])


def plan_drafts(
    sampled_token_ids: Sequence[Sequence[int]],
    num_tokens_no_spec: Sequence[int],
    max_model_len: int,
    num_tokens: int,
    disable_by_batch_size: int | None,
) -> DraftPlan:
    """Pick the requests to draft for and cap each at the context limit."""
    batch = len(sampled_token_ids)
    if over_batch_cap(disable_by_batch_size, batch):
        return DraftPlan([], [])
    rows, lengths = [], []
    for i, tokens in enumerate(sampled_token_ids):
        room = max_model_len - int(num_tokens_no_spec[i]) - 1
        n = min(num_tokens, room)
        if tokens and n >= 1:
            rows.append(i)
            lengths.append(n)
    return DraftPlan(rows, lengths)


class ArcticProposer:
    """Drafts with an Arctic speculator (MLP or LSTM) loaded next to the target."""

    def __init__(self, vllm_config: Any, device: torch.device, runner: Any = None) -> None:
        self.vllm_config = vllm_config
        self.speculative_config = vllm_config.speculative_config
        self.device = device
        self.num_draft_tokens = arctic_draft_tokens(self.speculative_config)
        self.num_speculative_tokens = self.speculative_config.num_speculative_tokens
        self.disable_by_batch_size = getattr(self.speculative_config, "disable_by_batch_size", None)
        self.max_model_len = vllm_config.model_config.max_model_len
        self.model: torch.nn.Module | None = None
        # Wall time of propose() (drafts end on the host, so GPU work is included), the
        # steps the cost rule kept the speculator from drafting ("withheld"), and those
        # of them where it kept every draft back, suffix drafts too ("undrafted").
        self.timing = {"calls": 0, "seconds": 0.0, "withheld": 0, "undrafted": 0}
        self.hybrid = None
        if is_hybrid(self.speculative_config):
            from arctic_inference.vllm.spec_dec.hybrid import HybridDrafter

            self.hybrid = HybridDrafter.from_config(self.speculative_config, self.max_model_len)
        # Choices: the speculator (and suffix drafts), [suffix drafts alone,] nothing.
        choices = 3 if self.hybrid is not None else 2
        self.gate = DraftGate(choices) if gated_by_cost(self.speculative_config) else None
        self._batch_requests: set[str] = set()  # the previous step's, for the gate

    # --- loading -------------------------------------------------------------

    def draft_vllm_config(self) -> Any:
        """The target's config with the speculator as the model (what vLLM's loader builds from)."""
        return dataclasses.replace(
            self.vllm_config,
            model_config=self.speculative_config.draft_model_config,
            quant_config=None,
        )

    def load_model(self, target_model: Any = None) -> None:
        from vllm.config import set_current_vllm_config
        from vllm.model_executor.model_loader import get_model

        draft = self.draft_vllm_config()
        with set_current_vllm_config(draft):
            self.model = get_model(vllm_config=draft, model_config=draft.model_config)
        self.model_dtype = next(self.model.parameters()).dtype
        model = self.model
        self.graphs = GraphedProposals(
            lambda tokens, hidden, n: model.generate_proposals(tokens, hidden, n),
            enabled=graphs_wanted(self.vllm_config),
        )
        logger.info(
            "Arctic speculator %s loaded: drafts %d tokens per step%s.",
            type(self.model).__name__,
            self.num_draft_tokens,
            " (hybrid with suffix decoding)" if self.hybrid is not None else "",
        )

    # --- drafting ------------------------------------------------------------

    @torch.inference_mode()
    def propose_arctic(
        self,
        plan: DraftPlan,
        sampled_token_ids: Sequence[Sequence[int]],
        sample_hidden_states: torch.Tensor,
        num_draft_tokens: Sequence[int] | None,
    ) -> dict[int, list[int]]:
        """Speculator drafts for the planned requests: batch index -> tokens."""
        if not plan.rows:
            return {}
        assert self.model is not None, "load_model() was not called"
        rows = last_sampled_rows(sampled_token_ids, num_draft_tokens)
        index = torch.tensor([rows[i] for i in plan.rows], device=sample_hidden_states.device)
        hidden = sample_hidden_states.index_select(0, index).to(self.model_dtype)
        last = torch.tensor(
            [sampled_token_ids[i][-1] for i in plan.rows], device=hidden.device, dtype=torch.long
        )
        drafts = self.graphs(last, hidden, plan.max_len).cpu().numpy()
        return {i: drafts[j, :n].tolist() for j, (i, n) in enumerate(zip(plan.rows, plan.lengths))}

    def propose(
        self,
        sampled_token_ids: list[list[int]],
        sample_hidden_states: torch.Tensor,
        spec_decode_metadata: Any,
        input_batch: Any,
    ) -> list[list[int]]:
        """One draft (maybe empty) per request of the batch, in batch order."""
        start = time.perf_counter()
        try:
            return self._propose(
                sampled_token_ids, sample_hidden_states, spec_decode_metadata, input_batch
            )
        finally:
            self.timing["calls"] += 1
            self.timing["seconds"] += time.perf_counter() - start

    def _gate_choice(
        self, sampled_token_ids: Sequence[Sequence[int]], capped: bool, req_ids: Sequence[str]
    ) -> int:
        """The cost rule's choice for this step: 0 drafts with the speculator, the last
        choice drafts nothing (see :mod:`.draft_gate`); 0 without the rule."""
        if self.gate is None:
            return 0
        arrivals = self._count_arrivals(req_ids)
        if capped:
            self.gate.pause()  # the cap decides; its steps measure no choice
            return 0
        batch, tokens = len(sampled_token_ids), sum(len(t) for t in sampled_token_ids)
        group = self.tp_group
        if group is None:
            choice = self.gate.choose(tokens, batch, arrivals)
        else:
            # Every rank runs the sharded speculator's collectives, so all must make the
            # same choice; their clocks differ, so rank 0's gate chooses for the group.
            mine = self.gate.choose(tokens, batch, arrivals) if self._chooses_for_the_group else 0
            choice = shared_choice(mine, group, self.device)
        if choice > 0:
            self.timing["withheld"] += 1
        if self.gate.drafts_nothing(choice):
            self.timing["undrafted"] += 1
        return choice

    def _count_arrivals(self, req_ids: Sequence[str]) -> int:
        """How many of this step's requests the previous step did not have (the cost rule
        re-judges its choices once half the batch is new)."""
        current = set(req_ids)
        arrivals = len(current - self._batch_requests)
        self._batch_requests = current
        return arrivals

    @functools.cached_property
    def tp_group(self) -> Any:
        """The speculator's tensor-parallel group when it has several ranks, else None."""
        from vllm.distributed import get_tp_group

        try:
            group = get_tp_group()
        except AssertionError:  # no model-parallel state: a single process
            return None
        return group if group.world_size > 1 else None

    def _propose(self, sampled_token_ids, sample_hidden_states, spec_decode_metadata, input_batch):
        num_draft = None if spec_decode_metadata is None else spec_decode_metadata.num_draft_tokens
        num_tokens = np.asarray(input_batch.num_tokens_no_spec[: len(sampled_token_ids)])
        plan = plan_drafts(
            sampled_token_ids,
            num_tokens,
            self.max_model_len,
            self.num_draft_tokens,
            self.disable_by_batch_size,
        )
        capped = over_batch_cap(self.disable_by_batch_size, len(sampled_token_ids))
        choice = self._gate_choice(
            sampled_token_ids, capped, input_batch.req_ids[: len(sampled_token_ids)]
        )
        if choice > 0:
            plan = DraftPlan([], [])
        undrafted = self.gate is not None and self.gate.drafts_nothing(choice)
        if self.hybrid is None:
            arctic = self.propose_arctic(plan, sampled_token_ids, sample_hidden_states, num_draft)
            return [arctic.get(i, []) for i in range(len(sampled_token_ids))]

        def arctic_for(rows: list[int]) -> dict[int, list[int]]:
            return self.propose_arctic(
                plan.only(rows), sampled_token_ids, sample_hidden_states, num_draft
            )

        drafting = not capped and not undrafted  # the rule may hold suffix drafts back too
        if drafting and self.gate is not None:
            self._catch_up_unbooked(input_batch)
        drafts = self.hybrid.combine(
            input_batch,
            sampled_token_ids,
            num_draft,
            set(plan.rows),
            arctic_for,
            self.num_speculative_tokens,
            drafting=drafting,
        )
        if undrafted and not capped:
            self._look_for_repeats(input_batch, len(sampled_token_ids))
        return drafts

    def _look_for_repeats(self, input_batch: Any, batch: int) -> None:
        """A hybrid step the rule kept without drafts because "no drafts" is the best:
        at a small batch, ask the suffix trees whether the text repeats again, and if
        their drafts promise ``REPEAT_PROMISE`` accepted tokens per request, have the rule
        re-probe suffix drafts at once (``DraftGate.reconsider``).

        The rates alone show the change only at the next probe of suffix drafts, which
        the rule thins while they lose: one at a time on copy-llama, hybrid drafted
        nothing on a median 21 % of its steps where suffix decoding alone drafted on all,
        and ran x0.89 of it (``bench/spec/RESULTS.md``, fourteenth session). The trees'
        upkeep this needs is the catch-up the next drafting step would do; where it
        leads to a probe, its time is left out of this step's.
        """
        gate, hybrid = self.gate, self.hybrid
        assert gate is not None and hybrid is not None
        if batch > REPEAT_CHECK_MAX_BATCH or not self._chooses_for_the_group:
            return
        # Nothing to ask where suffix drafts lead already (this step probed no drafts),
        # or are being measured, or evidence of late proved wrong.
        if not gate.reconsidering(batch, [SUFFIX_ALONE]):
            return
        start = gate.clock()
        if hybrid.promise(input_batch, batch, self.num_speculative_tokens) >= REPEAT_PROMISE:
            gate.reconsider(batch, [SUFFIX_ALONE])
            gate.discount(gate.clock() - start)

    @property
    def _chooses_for_the_group(self) -> bool:
        """Whether this rank's gate makes the choices (rank 0 under tensor parallelism)."""
        group = self.tp_group
        return group is None or group.rank_in_group == 0

    def _catch_up_unbooked(self, input_batch: Any) -> None:
        """Feed the suffix trees what the steps without drafts deferred, and leave that
        time out of this drafting step's in the cost rule.

        Booked to the drafting step, the catch-up after a stretch of undrafted steps made
        drafting look slower than it is, and the rule held back more: on copy-llama at
        batch 32 hybrid drafted nothing on 76 % of its steps while suffix decoding alone
        ran x1.36 of no speculation (``bench/spec/RESULTS.md``, twelfth session). Feeding
        the trees on every undrafted step instead would cost a batch of 32 about twice
        the host time of deferring (``bench/spec/follow_cost.py``).
        """
        assert self.gate is not None and self.hybrid is not None
        start = self.gate.clock()
        self.hybrid.catch_up(input_batch)
        self.gate.discount(self.gate.clock() - start)
