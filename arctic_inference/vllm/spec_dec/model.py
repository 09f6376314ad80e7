"""The Arctic speculator models: MLP and LSTM draft heads as vLLM models.

Each draft step reads the previous state (the target's last hidden state for
the first step, the speculator's own state after that) and the embedding of
the token just chosen, mixes them, and predicts the next token greedily::

    MLP  step: s = gelu(ln(proj(h) + emb(t) * c))                  -> head(s)
    LSTM step: a = proj(h) + [emb(t)]*4 * c; gates f, i, o = sigmoid(a[:3D])
               cell = cell*f + gelu(cell_ln(a[3D:]))*i
               s = gelu(state_ln(cell)) * o                        -> head(s)

with ``c`` the trained mixing ratio (:attr:`SpeculatorSpec.emb_scale`).

Tensor parallelism: token embeddings and LM heads are vLLM's vocab-parallel
layers, so each rank holds a slice of the vocabulary of the TP group the
target uses. The greedy choice takes each rank's best logit of its slice and
one all-gather of (value, index) pairs picks the global best, so the full
logits are never gathered. Projections and norms are small and replicated.

Tied weights (``tie_weights``): the first step has its own projection, every
later step reuses the second step's; embedding, norm and head are shared, so
a tied speculator can draft any number of tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import torch
import torch.nn.functional as F
from torch import nn
from vllm.config import VllmConfig
from vllm.distributed import (
    get_tensor_model_parallel_rank,
    get_tensor_model_parallel_world_size,
    get_tp_group,
)
from vllm.model_executor.layers.vocab_parallel_embedding import (
    ParallelLMHead,
    VocabParallelEmbedding,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader

from arctic_inference.vllm.spec_dec.config import (
    LSTM_ARCH,
    MLP_ARCH,
    SpeculatorConfigError,
    SpeculatorSpec,
    parse_speculator_config,
)
from arctic_inference.vllm.spec_dec.ops import speculator_ln, sum_lstm

SQRT2 = 2**0.5
LN_EPS = 1e-6
LSTM_GATES = ("forget", "input", "output", "cell")
# A ``sum_rnn`` checkpoint of the LSTM architecture wraps each stage in a
# one-element nn.Sequential: ``emb.0.0.weight`` is ``emb.0.weight`` here.
_SEQUENTIAL_STAGE = re.compile(r"^(emb|proj|ln)\.(\d+)\.0\.")


class SpeculatorNorm(nn.Module):
    """RMS normalisation with an optional affine part (the fused ``speculator_ln``)."""

    def __init__(self, dim: int, *, affine: bool = True, eps: float = LN_EPS) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(dim)) if affine else None
        self.bias = nn.Parameter(torch.empty(dim)) if affine else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return speculator_ln(x, self.weight, self.bias, self.eps)


def merge_shard_argmax(values: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """Global greedy token from each rank's best: ``[B, tp]`` values and indices -> ``[B]``.

    Ties go to the lowest rank, i.e. the lowest token id, like one global argmax.
    """
    best = values.argmax(dim=-1, keepdim=True)
    return indices.gather(-1, best).squeeze(-1)


class ArcticSpeculatorBase(nn.Module):
    """What the MLP and LSTM speculators share: heads, greedy choice, proposal loop, loading."""

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        self.spec: SpeculatorSpec = parse_speculator_config(vllm_config.model_config.hf_config)
        spec = self.spec
        self.n_predict = spec.n_predict
        self.vocab_size = spec.vocab_size
        self.hidden_dim = spec.hidden_dim
        self.tp_size = get_tensor_model_parallel_world_size()
        self.tp_rank = get_tensor_model_parallel_rank()
        n_heads = 1 if spec.tie_weights else spec.n_predict
        self.head = nn.ModuleList(
            ParallelLMHead(spec.vocab_size, spec.width, bias=False, prefix=f"{prefix}head.{i}")
            for i in range(n_heads)
        )
        self.ln0 = SpeculatorNorm(spec.hidden_dim, affine=False) if spec.scale_input else None

    # --- indices of the weights a step uses ---------------------------------

    def max_draft_tokens(self) -> int | None:
        """How many tokens one proposal can draft (``None``: unbounded, tied weights)."""
        return self.spec.max_heads()

    def _shared(self, step: int) -> int:
        return 0 if self.spec.tie_weights else step

    def _proj_index(self, step: int) -> int:
        return min(step, 1) if self.spec.tie_weights else step

    # --- one step ------------------------------------------------------------

    def initial_state(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.ln0 is None:
            return hidden
        return self.ln0(hidden) / SQRT2

    def step(
        self, step: int, tokens: torch.Tensor, state: torch.Tensor, cell: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        raise NotImplementedError

    def greedy(self, step: int, state: torch.Tensor) -> torch.Tensor:
        """The next token of every row: argmax over the (sharded) vocabulary."""
        head = self.head[self._shared(step)]
        shard = head.shard_indices
        n_local = shard.num_org_elements
        logits = F.linear(state, head.weight[:n_local])
        if self.tp_size == 1:
            return logits.argmax(dim=-1)
        if n_local == 0:
            value = torch.full(state.shape[:1], float("-inf"), device=state.device)
            index = torch.zeros(state.shape[:1], dtype=torch.long, device=state.device)
        else:
            value, index = logits.max(dim=-1)
        pair = torch.stack([value.double(), (index + shard.org_vocab_start_index).double()], -1)
        gathered = get_tp_group().all_gather(pair, dim=-1).view(-1, self.tp_size, 2)
        return merge_shard_argmax(gathered[..., 0], gathered[..., 1].long())

    # --- the proposal loop -----------------------------------------------------

    def generate_proposals(
        self, input_ids: torch.Tensor, previous_hidden_states: torch.Tensor, num_predict_tokens: int
    ) -> torch.Tensor:
        """Draft ``num_predict_tokens`` tokens per row: ``[B]`` ids, ``[B, H]`` states -> ``[B, k]``."""
        limit = self.max_draft_tokens()
        if num_predict_tokens < 1 or (limit is not None and num_predict_tokens > limit):
            raise ValueError(
                f"this speculator drafts 1 to {limit} tokens per step, "
                f"{num_predict_tokens} were asked; lower num_speculative_tokens."
            )
        if previous_hidden_states.shape[-1] != self.hidden_dim:
            raise ValueError(
                f"the speculator reads hidden states of size {self.hidden_dim}, the target "
                f"gives {previous_hidden_states.shape[-1]}; it was trained for another model."
            )
        tokens = input_ids.long().clamp(0, self.vocab_size - 1)
        state = self.initial_state(previous_hidden_states)
        cell: torch.Tensor | None = None
        drafts = []
        for i in range(num_predict_tokens):
            state, cell = self.step(i, tokens, state, cell)
            tokens = self.greedy(i, state).clamp(0, self.vocab_size - 1)
            drafts.append(tokens)
        return torch.stack(drafts, dim=-1)

    def forward(self, *args, **kwargs):  # pragma: no cover - vLLM never runs a draft forward
        raise RuntimeError("Arctic speculators draft through generate_proposals().")

    # --- loading ---------------------------------------------------------------

    def checkpoint_name(self, name: str) -> str | None:
        """This model's parameter name of a checkpoint tensor (``None``: skip it)."""
        name = name.removeprefix("speculator.")
        if self.spec.tie_weights:
            # Tied checkpoints may list the shared tensors once per step.
            name = re.sub(r"^(emb|ln|head)\.\d+\.", r"\1.0.", name)
            name = re.sub(r"^proj\.(\d+)\.", lambda m: f"proj.{min(int(m[1]), 1)}.", name)
        return name

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        params = dict(self.named_parameters())
        loaded: set[str] = set()
        for raw_name, tensor in weights:
            name = self.checkpoint_name(raw_name)
            if name is None:
                continue
            if self.load_special(name, tensor, params, loaded):
                continue
            param = params.get(name)
            if param is None:
                raise SpeculatorConfigError(
                    f"speculator checkpoint tensor {raw_name!r} has no place in a "
                    f"{self.spec.architecture} ({self.spec.method}); the config does not "
                    "describe these weights."
                )
            if param.shape != tensor.shape and not hasattr(param, "weight_loader"):
                raise SpeculatorConfigError(
                    f"speculator checkpoint tensor {raw_name!r} has shape "
                    f"{tuple(tensor.shape)}, the config makes it {tuple(param.shape)}."
                )
            getattr(param, "weight_loader", default_weight_loader)(param, tensor)
            loaded.add(name)
        return loaded

    def load_special(
        self,
        name: str,
        tensor: torch.Tensor,
        params: dict[str, nn.Parameter],
        loaded: set[str],
    ) -> bool:
        """Hook for tensors stored differently in the checkpoint (LSTM gates)."""
        return False


class ArcticMLPSpeculator(ArcticSpeculatorBase):
    """``ArcticMLPSpeculatorPreTrainedModel``, and the ``sum_rnn`` LSTM-architecture checkpoints."""

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        spec = self.spec
        if spec.is_lstm:
            raise SpeculatorConfigError(
                f"{spec.architecture} with method=sum_lstm is served by the LSTM speculator."
            )
        n_shared = 1 if spec.tie_weights else spec.n_predict
        n_proj = 2 if spec.tie_weights else spec.n_predict
        self.emb = nn.ModuleList(
            VocabParallelEmbedding(spec.vocab_size, spec.width, prefix=f"{prefix}emb.{i}")
            for i in range(n_shared)
        )
        self.proj = nn.ModuleList(
            nn.Linear(spec.hidden_dim if i == 0 else spec.width, spec.width, bias=False)
            for i in range(n_proj)
        )
        self.ln = nn.ModuleList(SpeculatorNorm(spec.width) for _ in range(n_shared))

    def step(self, step, tokens, state, cell):
        i = self._shared(step)
        mixed = self.proj[self._proj_index(step)](state)
        mixed = mixed + self.emb[i](tokens) * self.spec.emb_scale
        return F.gelu(self.ln[i](mixed)), None

    def checkpoint_name(self, name: str) -> str | None:
        if self.spec.architecture != MLP_ARCH:
            name = _SEQUENTIAL_STAGE.sub(r"\1.\2.", name.removeprefix("speculator."))
        return super().checkpoint_name(name)


class ArcticLSTMSpeculator(ArcticSpeculatorBase):
    """``ArcticLSTMSpeculatorPreTrainedModel`` (and ``MLPVariantSpeculatorPreTrainedModel``).

    A ``sum_rnn`` checkpoint of these architectures is the MLP step; building
    this class for one delegates to :class:`ArcticMLPSpeculator` (see ``__new__``).
    """

    def __new__(cls, *, vllm_config: VllmConfig, prefix: str = ""):
        spec = parse_speculator_config(vllm_config.model_config.hf_config)
        if not spec.is_lstm:
            return ArcticMLPSpeculator(vllm_config=vllm_config, prefix=prefix)
        return super().__new__(cls)

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        spec = self.spec
        gates = ("forget",) if spec.tie_lstm_embs else LSTM_GATES
        for gate in gates:
            emb = VocabParallelEmbedding(
                spec.vocab_size, spec.emb_dim, prefix=f"{prefix}{gate}_emb"
            )
            setattr(self, f"{gate}_emb", nn.ModuleList([emb]))
        self.gates = gates
        self.projs = nn.ModuleList(
            nn.Linear(dim, 4 * spec.proj_dim, bias=False) for dim in (spec.hidden_dim, spec.width)
        )
        self.cell_ln = nn.ModuleList([SpeculatorNorm(spec.width)])
        self.state_ln = nn.ModuleList([SpeculatorNorm(spec.width)])
        self._partial_projs: dict[str, set[str]] = {}

    def gate_embeddings(self, tokens: torch.Tensor) -> torch.Tensor:
        """``[B, 4D]``: the token's embedding for the forget, input, output and cell gates."""
        if self.spec.tie_lstm_embs:
            return self.forget_emb[0](tokens).repeat(1, 4)
        return torch.cat([getattr(self, f"{g}_emb")[0](tokens) for g in LSTM_GATES], dim=-1)

    def step(self, step, tokens, state, cell):
        mixed = self.projs[min(step, 1)](state)
        if cell is None:
            cell = torch.zeros(
                (*mixed.shape[:-1], self.spec.width), dtype=mixed.dtype, device=mixed.device
            )
        cell_ln, state_ln = self.cell_ln[0], self.state_ln[0]
        return sum_lstm(
            mixed,
            self.gate_embeddings(tokens),
            cell,
            cell_ln.weight,
            cell_ln.bias,
            state_ln.weight,
            state_ln.bias,
            self.spec.emb_scale,
            cell_ln.eps,
            state_ln.eps,
        )

    def checkpoint_name(self, name: str) -> str | None:
        name = name.removeprefix("speculator.")
        if self.spec.tie_lstm_embs and re.match(r"^(input|cell|output)_emb\.", name):
            return None  # unused when the gates share the forget embedding
        if re.match(r"^(cell_ln|state_ln)\.\d+\.", name):
            return re.sub(r"\.\d+\.", ".0.", name, count=1)
        if self.spec.tie_weights:
            name = re.sub(r"^head\.\d+\.", "head.0.", name)
        return name

    def load_special(self, name, tensor, params, loaded) -> bool:
        # The checkpoint stores one projection per gate; here they are one
        # matrix, rows in forget, input, output, cell order.
        match = re.match(r"^(forget|input|output|cell)_proj\.(\d+)\.weight$", name)
        if match is None:
            return False
        gate, stage = match[1], int(match[2])
        if stage > 1:
            return True  # tied: later stages repeat stage 1
        param = params[f"projs.{stage}.weight"]
        rows = self.spec.proj_dim
        block = param.data[LSTM_GATES.index(gate) * rows : (LSTM_GATES.index(gate) + 1) * rows]
        if block.shape != tensor.shape:
            raise SpeculatorConfigError(
                f"speculator checkpoint tensor {name!r} has shape {tuple(tensor.shape)}, "
                f"the config makes it {tuple(block.shape)}."
            )
        block.copy_(tensor)
        seen = self._partial_projs.setdefault(f"projs.{stage}.weight", set())
        seen.add(gate)
        if seen == set(LSTM_GATES):
            loaded.add(f"projs.{stage}.weight")
        return True


ARCH_CLASSES = {
    MLP_ARCH: ArcticMLPSpeculator,
    LSTM_ARCH: ArcticLSTMSpeculator,
}
