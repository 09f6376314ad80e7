"""Both layouts of a loaded model, switched per engine step.

:class:`FoldedModel` walks the model once after loading and prebuilds every
tensor-parallel layer's folded layout (:mod:`.folded_layers`). A FOLDED step
installs them on entry and puts the SP layout back on exit, so outside a
FOLDED step or dummy run (weight loading, SP steps) the model is exactly what
vLLM loaded. Before a switch to FOLDED, a layer whose weight was replaced
since the views were cut (a weight reload that makes new tensors) gets its
views rebuilt, so a step never computes with stale views; in-place updates
reach the views by themselves, since they share the TP shard's storage.

An LM head whose logits the folded group cannot gather in order (SP and TP
both above 1, see :class:`~.folded_layers.FoldPosition`) keeps its TP layout;
the model's logits processors then run over the SP layout's TP group in a
FOLDED step (:func:`logits_over_tp`), so they cost what they cost in an SP step.

A module that is tensor-parallel in a way the folding does not cover (it
keeps a ``tp_size`` but is none of the layers :func:`~.folded_layers.build_layer`
knows, e.g. fused MoE experts) makes the build fail with its name: a FOLDED
step would otherwise reduce its TP partial results over the wrong group.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from vllm.model_executor.layers.linear import QKVParallelLinear, ReplicatedLinear
from vllm.model_executor.layers.logits_processor import LogitsProcessor
from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead

from arctic_inference.vllm.ulysses import groups
from arctic_inference.vllm.ulysses.folded_layers import (
    FoldError,
    FoldPosition,
    LayerLayouts,
    Layout,
    attention_layouts,
    build_layer,
)
from arctic_inference.vllm.ulysses.shift import StepMode

# Keep a ``tp_size`` attribute without sharding anything by it.
REPLICATED = (ReplicatedLinear,)


def position_of(sp_groups: groups.SequenceParallelGroups) -> FoldPosition:
    """This worker's place in its SP, TP and folded groups."""
    layout = sp_groups.layout
    pos = FoldPosition(
        sp=layout.sp,
        tp=layout.tp,
        sp_rank=sp_groups.sp.rank_in_group,
        tp_rank=sp_groups.tp.rank_in_group,
        gathers_in_order=list(sp_groups.folded.ranks) == sorted(sp_groups.folded.ranks),
    )
    if sp_groups.folded.rank_in_group != pos.folded_rank:
        raise RuntimeError(
            f"folded rank {sp_groups.folded.rank_in_group} is not TP x SP + SP = {pos.folded_rank}."
        )
    return pos


def logits_over_tp(name: str, module: LogitsProcessor) -> LayerLayouts:
    """A logits processor that, in a FOLDED step, gathers over the SP layout's TP group."""
    forward = module.forward

    def over_tp(*args: Any, **kwargs: Any) -> Any:
        with groups.sp_layout_tp():
            return forward(*args, **kwargs)

    attrs: dict[str, Callable[..., Any]] = {"forward": over_tp}
    return LayerLayouts(
        name=name,
        module=module,
        sp=Layout(params={}, attrs={}, drop=("forward",)),
        folded=Layout(params={}, attrs=attrs),
    )


def fold_model(model: torch.nn.Module, pos: FoldPosition) -> list[LayerLayouts]:
    """Every layer's two layouts, or :class:`FoldError` naming what cannot fold."""
    built: list[LayerLayouts] = []
    covered: set[int] = set()
    for name, module in model.named_modules():
        layer = build_layer(name, module, pos)
        if layer is not None:
            built.append(layer)
            covered.add(id(module))
        elif getattr(module, "disable_tp", False) or isinstance(module, ParallelLMHead):
            covered.add(id(module))  # replicated, or an LM head kept in its TP layout
        if isinstance(module, LogitsProcessor) and not pos.gathers_in_order:
            built.append(logits_over_tp(name, module))
        for child in module.children():
            if isinstance(child, QKVParallelLinear) and not child.disable_tp:
                built.append(attention_layouts(name, module, child, pos))
    unknown = [
        f"{name} ({type(module).__name__})"
        for name, module in model.named_modules()
        if "tp_size" in module.__dict__
        and id(module) not in covered
        and not isinstance(module, REPLICATED)
    ]
    if unknown:
        raise FoldError(
            "shift parallelism cannot fold these tensor-parallel modules: "
            + ", ".join(unknown[:5])
            + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            + "."
        )
    return built


class FoldedModel:
    """A loaded model with its SP and FOLDED layouts; ``step(mode)`` runs one step in one."""

    def __init__(self, model: torch.nn.Module, pos: FoldPosition) -> None:
        self.model = model
        self.position = pos
        self.layers = fold_model(model, pos)
        self.mode = StepMode.SP

    def _refresh_stale(self) -> None:
        for i, layer in enumerate(self.layers):
            if layer.is_stale():
                rebuilt = build_layer(layer.name, layer.module, self.position)
                if rebuilt is None:
                    raise FoldError(f"{layer.name} is no longer a tensor-parallel layer.")
                self.layers[i] = rebuilt

    def switch(self, mode: StepMode) -> None:
        """Install ``mode``'s layout on every layer (nothing when already in it)."""
        if mode is self.mode:
            return
        if mode is StepMode.FOLDED:
            self._refresh_stale()
        for layer in self.layers:
            (layer.folded if mode is StepMode.FOLDED else layer.sp).install(layer.module)
        self.mode = mode

    @contextlib.contextmanager
    def step(self, mode: StepMode) -> Iterator[None]:
        before = self.mode
        self.switch(mode)
        try:
            yield
        finally:
            self.switch(before)
