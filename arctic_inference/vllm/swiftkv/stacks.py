"""The two compiled regions of the SwiftKV model, as vLLM compiles LlamaModel.

Each class is a ``@support_torch_compile`` unit: Dynamo traces its ``forward``
once as one graph, vLLM's backend splits it at the attention ops into piecewise
CUDA graphs. The batch-dependent routing between them lives in
:class:`~arctic_inference.vllm.swiftkv.model.LlamaSwiftKVModel`.

No ``from __future__ import annotations`` here on purpose: the decorator reads
the ``forward`` annotations (``torch.Tensor``, ``torch.Tensor | None``) as
objects to mark dimension 0 of each tensor argument dynamic.
"""

import torch
from torch import nn
from vllm.compilation.decorators import support_torch_compile
from vllm.config import VllmConfig


@support_torch_compile
class SwiftKVBottomStack(nn.Module):
    """The compiled region that runs on every token.

    Embedding, layers ``0 .. num_key_value_layers-1`` and the boundary K/V
    projection (or, with SwiftKV off, the final norm). The modules belong to
    :class:`LlamaSwiftKVModel` and are only referenced here (plain lists are
    not registered), so parameter names stay those of the checkpoint.
    """

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "", owner: nn.Module) -> None:
        super().__init__()
        self._owner = [owner]

    def forward(
        self,
        input_ids: torch.Tensor | None,
        positions: torch.Tensor,
        inputs_embeds: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, ...]:
        model = self._owner[0]
        hidden = inputs_embeds if inputs_embeds is not None else model.embed_input_ids(input_ids)
        residual = None
        for layer in model.layers[: model.num_kv_layers]:
            hidden, residual = layer(positions, hidden, residual)
        if not model.num_swiftkv:
            hidden, _ = model.norm(hidden, residual)
            return (hidden,)
        k, v = model.boundary_kv(positions, hidden, residual)
        return hidden, residual, k, v


@support_torch_compile
class SwiftKVTopStack(nn.Module):
    """The compiled region of the SwiftKV layers and the final norm.

    Runs on all tokens (full path) or on the logits tokens only (prefill
    path); ``k``/``v`` hold every SwiftKV layer's K/V side by side.
    """

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "", owner: nn.Module) -> None:
        super().__init__()
        self._owner = [owner]

    def forward(
        self,
        positions: torch.Tensor,
        hidden_states: torch.Tensor,
        residual: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
    ) -> torch.Tensor:
        model = self._owner[0]
        ks, vs = k.chunk(model.num_swiftkv, dim=-1), v.chunk(model.num_swiftkv, dim=-1)
        for j, layer in enumerate(model.layers[model.num_kv_layers :]):
            hidden_states, residual = layer(positions, hidden_states, residual, ks[j], vs[j])
        hidden_states, _ = model.norm(hidden_states, residual)
        return hidden_states
