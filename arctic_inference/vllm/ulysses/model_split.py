"""The SP layout's token split as part of the model's own forward.

In an SP step each rank runs its block of the step's tokens
(:class:`~.token_split.TokenSplit`) and the hidden states are gathered over
the SP group before logits. Both are forward hooks on the loaded model, so
they run wherever vLLM calls it -- a real step, a warm-up or profile run, and
the capture of a CUDA graph, which then holds the split and the gather too
(vLLM wraps this very module in its ``CUDAGraphWrapper``). The split of a
graph's inputs is a view of vLLM's persistent input buffers whenever the size
divides by SP (:func:`~.shift.graph_capture_sizes`), so replay reads the step's
tokens. In a FOLDED step, or outside SP, the hooks do nothing.
"""

from __future__ import annotations

from typing import Any

import torch

from arctic_inference.vllm.ulysses import groups
from arctic_inference.vllm.ulysses.shift import StepMode
from arctic_inference.vllm.ulysses.token_split import TokenSplit

Kwargs = dict[str, Any]


class TokenSplitHooks:
    """``before`` splits the inputs of an SP step, ``after`` gathers its output."""

    def __init__(self) -> None:
        self._split: TokenSplit | None = None

    def before(
        self, module: torch.nn.Module, args: tuple[Any, ...], kwargs: Kwargs
    ) -> tuple[tuple[Any, ...], Kwargs] | None:
        self._split = None
        sp_groups = groups.current()
        if sp_groups is None or sp_groups.mode is not StepMode.SP:
            return None
        if args:
            raise NotImplementedError(
                "sequence parallelism splits a model called with keyword arguments, as "
                "vLLM's runner calls it."
            )
        input_ids, inputs_embeds = kwargs.get("input_ids"), kwargs.get("inputs_embeds")
        tokens = input_ids if input_ids is not None else inputs_embeds
        if tokens is None:
            raise ValueError("an SP step needs input_ids or inputs_embeds.")
        split = TokenSplit(
            num_tokens=tokens.shape[0], sp=sp_groups.layout.sp, rank=sp_groups.sp.rank_in_group
        )
        positions = kwargs.get("positions")
        kwargs = dict(kwargs)
        kwargs["input_ids"] = split.take(input_ids)
        kwargs["inputs_embeds"] = split.take(inputs_embeds)
        if positions is not None:
            kwargs["positions"] = split.take(positions, dim=positions.dim() - 1)
        self._split = split
        return args, kwargs

    def after(
        self, module: torch.nn.Module, args: tuple[Any, ...], kwargs: Kwargs, output: Any
    ) -> torch.Tensor | None:
        split, self._split = self._split, None
        if split is None:
            return None
        if not isinstance(output, torch.Tensor):
            raise NotImplementedError(
                "sequence parallelism supports models that return one hidden-state tensor."
            )
        sp_groups = groups.current()
        if sp_groups is None:
            raise RuntimeError("the SP groups went away during an SP forward.")
        return split.trim(sp_groups.sp.all_gather(output, dim=0))


def install_token_split(model: torch.nn.Module) -> TokenSplitHooks:
    """Register the split on ``model`` once (a second call returns the first hooks)."""
    existing = model.__dict__.get("_arctic_token_split")
    if isinstance(existing, TokenSplitHooks):
        return existing
    hooks = TokenSplitHooks()
    model.register_forward_pre_hook(hooks.before, with_kwargs=True)
    model.register_forward_hook(hooks.after, with_kwargs=True)
    model.__dict__["_arctic_token_split"] = hooks
    return hooks
