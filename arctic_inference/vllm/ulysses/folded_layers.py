"""The folded-TP layout of each vLLM tensor-parallel layer, cut from its TP shard.

A rank loads its layers in the SP layout (TP over the SP layout's TP group).
For a FOLDED step every tensor-parallel layer must compute with its folded
shard instead (``1 / (SP x TP)`` of the full weight) and report the folded
rank and size to its forward. :func:`build_layer` prepares that once, after
loading: a :class:`LayerLayouts` holds, for both layouts, the parameters
(``weight``, ``bias``) and the plain attributes the layer's forward reads
(``tp_rank``, ``tp_size``, the sizes per partition, the vocabulary shard
indices, the head counts of an attention module). Switching a layer is two
dict updates (its ``_parameters`` and ``__dict__``); no weight is copied, since
every folded weight is a view of the TP shard (:func:`~.shift.folded_view`
says where).

Merged projections (QKV, gate/up) have one folded piece per sub-projection,
and the pieces are not adjacent in the TP shard. In a FOLDED step they run as
one GEMM per piece on views, joined on the output
(:class:`PiecewiseLinearMethod`): weights stay resident once, and the cost is
one GEMM launch per piece (3 for QKV, 2 for gate/up) plus a copy of that
layer's output (``tokens x width / (SP x TP)``, small in the decode steps
FOLDED is for). Reordering the TP shard at load so each folded shard is one
block would instead put a permutation of the output on the SP layout's large
prefill steps, since the model splits the QKV output by the q/k/v widths.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from vllm.model_executor.layers.linear import (
    ColumnParallelLinear,
    QKVParallelLinear,
    RowParallelLinear,
    UnquantizedLinearMethod,
)
from vllm.model_executor.layers.vocab_parallel_embedding import (
    ParallelLMHead,
    UnquantizedEmbeddingMethod,
    VocabParallelEmbedding,
)

from arctic_inference.vllm.ulysses.heads import plain_tp_heads
from arctic_inference.vllm.ulysses.layout import ParallelLayout, RankCoords
from arctic_inference.vllm.ulysses.shift import folded_view

# Attributes an attention module may keep from its QKV projection's per-rank head
# counts (vLLM's Llama-style models split the QKV output with ``q_size``/``kv_size``).
ATTENTION_ATTRS = ("num_heads", "num_kv_heads", "q_size", "kv_size")


class FoldError(ValueError):
    """A layer of the loaded model has no folded layout this code can build."""


@dataclasses.dataclass(frozen=True)
class FoldPosition:
    """Where this rank sits: its SP and TP rank, and the folded rank they give."""

    sp: int
    tp: int
    sp_rank: int
    tp_rank: int
    # Whether the folded group's gathers come back in folded-rank order. torch
    # orders a process group by world rank, so the TP-major folded group gathers in
    # world order unless SP or TP is 1; then a vocabulary-parallel LM head, whose
    # logits are gathered, keeps its TP layout (:func:`build_layer`).
    gathers_in_order: bool = True

    @property
    def layout(self) -> ParallelLayout:
        return ParallelLayout(sp=self.sp, tp=self.tp)

    @property
    def coords(self) -> RankCoords:
        return RankCoords(dp=0, pp=0, sp=self.sp_rank, tp=self.tp_rank)

    @property
    def ranks(self) -> int:
        return self.sp * self.tp

    @property
    def folded_rank(self) -> int:
        return self.layout.folded_rank(self.coords)


@dataclasses.dataclass(frozen=True)
class Layout:
    """What a module holds in one layout: parameters and plain attributes."""

    params: Mapping[str, torch.nn.Parameter | None]
    attrs: Mapping[str, Any]
    drop: tuple[str, ...] = ()  # instance attributes this layout does not have

    def install(self, module: torch.nn.Module) -> None:
        module._parameters.update(self.params)
        module.__dict__.update(self.attrs)
        for name in self.drop:
            module.__dict__.pop(name, None)


@dataclasses.dataclass(frozen=True)
class LayerLayouts:
    """One module's two layouts; ``source`` is the TP-shard weight the views were cut from."""

    name: str
    module: torch.nn.Module
    sp: Layout
    folded: Layout
    source: torch.Tensor | None = None

    def is_stale(self) -> bool:
        """The module (in its SP layout) holds another weight than the views were cut from."""
        return self.source is not None and self.module._parameters.get("weight") is not self.source


class PiecewiseLinearMethod:
    """A merged layer's folded GEMM: one GEMM per sub-projection view, joined on the output."""

    def __init__(
        self, weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor | None]
    ) -> None:
        self.weights = tuple(weights)
        self.biases = tuple(biases)

    def apply(
        self, layer: torch.nn.Module, x: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        # ``bias`` is the layer's TP-shard bias (or None when the layer skips it);
        # the folded pieces of it were cut at build time.
        outs = [
            F.linear(x, w, b if bias is not None else None)
            for w, b in zip(self.weights, self.biases, strict=True)
        ]
        return torch.cat(outs, dim=-1)


def _param(view: torch.Tensor) -> torch.nn.Parameter:
    return torch.nn.Parameter(view, requires_grad=False)


def _layouts(
    name: str,
    module: torch.nn.Module,
    params: dict[str, torch.nn.Parameter | None],
    attrs: dict[str, Any],
) -> LayerLayouts:
    """The module's current (SP) values of exactly the keys the folded layout sets."""
    sp = Layout(
        params={k: module._parameters[k] for k in params},
        attrs={k: module.__dict__[k] for k in attrs},
    )
    return LayerLayouts(
        name=name,
        module=module,
        sp=sp,
        folded=Layout(params=params, attrs=attrs),
        source=module._parameters.get("weight"),
    )


def _check_unquantized(name: str, module: torch.nn.Module, method: type) -> torch.Tensor:
    if type(module.quant_method) is not method:
        raise FoldError(
            f"{name} ({type(module).__name__}) uses {type(module.quant_method).__name__}; "
            "folded views are cut from unquantized weights only."
        )
    if "cpu_linear" in module.__dict__:
        raise FoldError(
            f"{name}: vLLM's CPU backend prepacked this weight; folded views need the plain one."
        )
    weight = module._parameters.get("weight")
    if weight is None or weight.dim() != 2:
        raise FoldError(f"{name} holds no 2-D weight to cut folded views from.")
    return weight


def _local_rows(
    held: tuple[int, ...], wanted: tuple[int, ...], head_size: int, offset: int, name: str
) -> tuple[int, int]:
    """Rows of the TP shard holding ``wanted`` heads, when they are adjacent there."""
    try:
        local = [held.index(h) for h in wanted]
    except ValueError:
        raise FoldError(
            f"{name}: folded heads {wanted} are not among the TP shard's {held}."
        ) from None
    if local != list(range(local[0], local[0] + len(local))):
        raise FoldError(f"{name}: folded heads {wanted} are not adjacent in the TP shard.")
    return offset + local[0] * head_size, offset + (local[-1] + 1) * head_size


def qkv_pieces(
    layer: QKVParallelLinear, pos: FoldPosition, name: str = "qkv"
) -> tuple[tuple[tuple[int, int], ...], dict[str, int]]:
    """Rows of the q, k and v pieces of the folded shard inside the TP shard, and the
    folded head counts. KV heads fewer than SP x TP are replicated (vLLM's rule):
    the folded piece is then the whole head the rank attends with."""
    heads, kv = layer.total_num_heads, layer.total_num_kv_heads
    if heads % pos.ranks or not (kv % pos.ranks == 0 or pos.ranks % kv == 0):
        raise FoldError(
            f"{name}: {heads} query and {kv} KV heads do not split over SP x TP = {pos.ranks}."
        )
    q_held = plain_tp_heads(heads, pos.tp, pos.tp_rank)
    kv_held = plain_tp_heads(kv, pos.tp, pos.tp_rank)
    if (len(q_held), len(kv_held)) != (layer.num_heads, layer.num_kv_heads):
        raise FoldError(f"{name} was not built for TP = {pos.tp}.")
    q_fold = plain_tp_heads(heads, pos.ranks, pos.folded_rank)
    kv_fold = plain_tp_heads(kv, pos.ranks, pos.folded_rank)
    q_width = len(q_held) * layer.head_size
    k_width = len(kv_held) * layer.head_size
    pieces = (
        _local_rows(q_held, q_fold, layer.head_size, 0, name),
        _local_rows(kv_held, kv_fold, layer.head_size, q_width, name),
        _local_rows(kv_held, kv_fold, layer.v_head_size, q_width + k_width, name),
    )
    counts = {
        "num_heads": len(q_fold),
        "num_kv_heads": len(kv_fold),
        "num_kv_head_replicas": max(1, pos.ranks // kv),
    }
    return pieces, counts


def _column(name: str, layer: ColumnParallelLinear, pos: FoldPosition) -> LayerLayouts:
    weight = _check_unquantized(name, layer, UnquantizedLinearMethod)
    extra: dict[str, Any] = {}
    try:
        if isinstance(layer, QKVParallelLinear):
            pieces, extra = qkv_pieces(layer, pos, name)
        else:
            sizes = getattr(layer, "output_sizes", None) or [layer.output_size]
            pieces = folded_view("column", sizes, pos.layout, pos.coords).pieces
    except ValueError as err:
        raise FoldError(f"{name}: {err}") from None
    if weight.shape[0] != sum(layer.output_partition_sizes):
        raise FoldError(f"{name}: weight rows do not match the layer's TP partition.")
    if layer.gather_output and (len(pieces) > 1 or not pos.gathers_in_order):
        raise FoldError(
            f"{name} gathers its output, which the folded group cannot return in order."
        )
    widths = [b - a for a, b in pieces]
    bias = layer._parameters.get("bias")
    attrs: dict[str, Any] = {
        "tp_rank": pos.folded_rank,
        "tp_size": pos.ranks,
        "output_size_per_partition": sum(widths),
        "output_partition_sizes": widths,
        **extra,
    }
    params: dict[str, torch.nn.Parameter | None] = {}
    if len(pieces) == 1:
        ((a, b),) = pieces
        params["weight"] = _param(weight.narrow(0, a, b - a))
        if bias is not None:
            params["bias"] = _param(bias.narrow(0, a, b - a))
    else:
        if layer.skip_bias_add and bias is not None:
            raise FoldError(f"{name}: a merged layer that returns its bias cannot be folded.")
        attrs["quant_method"] = PiecewiseLinearMethod(
            [weight.narrow(0, a, b - a) for a, b in pieces],
            [None if bias is None else bias.narrow(0, a, b - a) for a, b in pieces],
        )
    return _layouts(name, layer, params, attrs)


def _row(name: str, layer: RowParallelLinear, pos: FoldPosition) -> LayerLayouts:
    weight = _check_unquantized(name, layer, UnquantizedLinearMethod)
    try:
        ((a, b),) = folded_view("row", [layer.input_size], pos.layout, pos.coords).pieces
    except ValueError as err:
        raise FoldError(f"{name}: {err}") from None
    if weight.shape[1] != layer.input_size_per_partition:
        raise FoldError(f"{name}: weight columns do not match the layer's TP partition.")
    # The bias is whole and added by rank 0 only; folded rank 0 is (SP 0, TP 0).
    return _layouts(
        name,
        layer,
        {"weight": _param(weight.narrow(1, a, b - a))},
        {"tp_rank": pos.folded_rank, "tp_size": pos.ranks, "input_size_per_partition": b - a},
    )


def _vocab(name: str, layer: VocabParallelEmbedding, pos: FoldPosition) -> LayerLayouts:
    weight = _check_unquantized(name, layer, UnquantizedEmbeddingMethod)
    padded = layer.num_embeddings_padded
    if padded != layer.org_vocab_size_padded:
        raise FoldError(
            f"{name}: {layer.num_added_embeddings} added vocabulary entries (e.g. LoRA "
            "extra tokens) are sharded apart from the base vocabulary; their folded "
            "shard is not a slice of the TP shard."
        )
    if padded % pos.ranks or weight.shape[0] != padded // pos.tp:
        raise FoldError(
            f"{name}: a padded vocabulary of {padded} does not split over "
            f"SP x TP = {pos.ranks} ranks."
        )
    per = padded // pos.ranks
    start = pos.sp_rank * per
    indices = layer._get_indices(
        padded,
        layer.org_vocab_size_padded,
        layer.num_embeddings,
        layer.org_vocab_size,
        pos.folded_rank,
        pos.ranks,
    )
    params: dict[str, torch.nn.Parameter | None] = {"weight": _param(weight.narrow(0, start, per))}
    bias = layer._parameters.get("bias")
    if bias is not None:
        params["bias"] = _param(bias.narrow(0, start, per))
    attrs = {
        "tp_size": pos.ranks,
        "shard_indices": indices,
        "num_embeddings_per_partition": per,
        "num_org_embeddings_per_partition": indices.org_vocab_end_index
        - indices.org_vocab_start_index,
        "num_added_embeddings_per_partition": indices.added_vocab_end_index
        - indices.added_vocab_start_index,
    }
    return _layouts(name, layer, params, attrs)


def build_layer(name: str, module: torch.nn.Module, pos: FoldPosition) -> LayerLayouts | None:
    """Both layouts of a tensor-parallel layer; ``None`` for any other module."""
    if getattr(module, "disable_tp", False):
        return None  # replicated in both layouts
    if isinstance(module, ColumnParallelLinear):
        return _column(name, module, pos)
    if isinstance(module, RowParallelLinear):
        return _row(name, module, pos)
    if isinstance(module, ParallelLMHead) and not pos.gathers_in_order:
        return None  # stays in the TP layout; its logits run over the TP group
    if isinstance(module, VocabParallelEmbedding):
        return _vocab(name, module, pos)
    return None


def attention_layouts(
    name: str, module: torch.nn.Module, qkv: QKVParallelLinear, pos: FoldPosition
) -> LayerLayouts:
    """The head counts an attention module keeps from its QKV projection, per layout.

    The module splits the QKV output with them, so in a FOLDED step they must be
    the folded counts. A module that keeps none of :data:`ATTENTION_ATTRS`, or
    keeps one that does not match its projection, splits some other way this
    code does not know, so it is refused.
    """
    _, counts = qkv_pieces(qkv, pos, f"{name}.qkv")
    per_tp = {
        "num_heads": qkv.num_heads,
        "num_kv_heads": qkv.num_kv_heads,
        "q_size": qkv.num_heads * qkv.head_size,
        "kv_size": qkv.num_kv_heads * qkv.head_size,
    }
    folded = {
        "num_heads": counts["num_heads"],
        "num_kv_heads": counts["num_kv_heads"],
        "q_size": counts["num_heads"] * qkv.head_size,
        "kv_size": counts["num_kv_heads"] * qkv.head_size,
    }
    kept = [k for k in ATTENTION_ATTRS if k in module.__dict__]
    wrong = [k for k in kept if module.__dict__[k] != per_tp[k]]
    if not kept or wrong:
        raise FoldError(
            f"{name} ({type(module).__name__}) owns a QKV projection but "
            + (
                f"its {', '.join(wrong)} do not match the projection's per-rank heads"
                if wrong
                else f"keeps none of {', '.join(ATTENTION_ATTRS)}"
            )
            + "; shift parallelism cannot tell how it splits the QKV output."
        )
    return _layouts(name, module, {}, {k: folded[k] for k in kept})
