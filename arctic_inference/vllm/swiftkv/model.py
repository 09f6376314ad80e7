"""``LlamaSwiftKVForCausalLM`` for vLLM 0.26.0's V1 engine.

Layers ``0 .. num_key_value_layers-1`` are vLLM's own ``LlamaDecoderLayer``.
At that boundary the residual stream is normalised (``norm_swiftkv``) and one
GEMM produces the keys and values of *every* higher layer
(``k_proj_swiftkv``/``v_proj_swiftkv`` of all of them, stacked). The higher
layers then only project queries (``q_proj_swiftkv``).

Two execution paths give the same logits:

* **full** (decode-only batches, CUDA-graph replays, speculative decoding):
  every token runs every layer; the higher layers' attention writes its K/V
  itself, like plain Llama.
* **prefill** (a batch with prompt tokens, run eagerly): the higher layers'
  K/V for all tokens go into their caches in one bulk write
  (:mod:`.kv_write`), then only the last scheduled token of each request -
  the one vLLM samples from - runs the higher layers, attending over the
  cache with metadata restricted to those tokens (:mod:`.metadata`). The
  other rows of the returned hidden states hold the bottom-layer state and
  are never sampled, which is why prompt logprobs are not supported.

The model is not torch.compiled: its prefill path branches on the batch.
Decode batches still replay full CUDA graphs (vLLM wraps the whole model), and
vLLM's fused CUDA kernels (RMSNorm, SiLU-and-mul, rotary) are switched on for
its layers, since no compiler fuses the native versions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import torch
from torch import nn
from vllm.config import VllmConfig
from vllm.distributed import get_tensor_model_parallel_world_size
from vllm.forward_context import get_forward_context, is_forward_context_available
from vllm.model_executor.custom_op import CustomOp
from vllm.model_executor.layers.attention import Attention
from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.layers.linear import (
    ColumnParallelLinear,
    MergedColumnParallelLinear,
    RowParallelLinear,
)
from vllm.model_executor.layers.logits_processor import LogitsProcessor
from vllm.model_executor.layers.rotary_embedding import get_rope
from vllm.model_executor.layers.vocab_parallel_embedding import (
    ParallelLMHead,
    VocabParallelEmbedding,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.models.llama import LlamaDecoderLayer, LlamaMLP
from vllm.sequence import IntermediateTensors

from arctic_inference.vllm.swiftkv.config import num_swiftkv_layers, validate_swiftkv_fields
from arctic_inference.vllm.swiftkv.kv_layout import KVLayout, resolve_layout
from arctic_inference.vllm.swiftkv.kv_write import OffsetTable, write_kv
from arctic_inference.vllm.swiftkv.metadata import (
    has_prompt_tokens,
    logits_token_indices,
    restrict_to_logits_tokens,
)


class SwiftKVUnsupported(ValueError):
    """An engine setting the SwiftKV model cannot serve."""


def _head_dim(config) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def _rope(config):
    return get_rope(
        _head_dim(config),
        max_position=getattr(config, "max_position_embeddings", 8192),
        rope_parameters=getattr(config, "rope_parameters", None),
        is_neox_style=True,
    )


class SwiftKVAttention(nn.Module):
    """Attention of a SwiftKV layer: own queries, K/V handed in from the boundary."""

    def __init__(self, vllm_config: VllmConfig, prefix: str) -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        tp = get_tensor_model_parallel_world_size()
        self.head_dim = _head_dim(config)
        self.num_heads = config.num_attention_heads // tp
        self.num_kv_heads = config.num_key_value_heads // tp
        bias = bool(getattr(config, "attention_bias", False))
        self.q_proj_swiftkv = ColumnParallelLinear(
            config.hidden_size,
            config.num_attention_heads * self.head_dim,
            bias=bias,
            quant_config=vllm_config.quant_config,
            prefix=f"{prefix}.q_proj_swiftkv",
        )
        self.o_proj = RowParallelLinear(
            config.num_attention_heads * self.head_dim,
            config.hidden_size,
            bias=bias,
            quant_config=vllm_config.quant_config,
            prefix=f"{prefix}.o_proj",
        )
        self.rotary_emb = _rope(config)
        self.attn = Attention(
            self.num_heads,
            self.head_dim,
            self.head_dim**-0.5,
            num_kv_heads=self.num_kv_heads,
            cache_config=vllm_config.cache_config,
            quant_config=vllm_config.quant_config,
            prefix=f"{prefix}.attn",
        )

    def forward(
        self,
        positions: torch.Tensor,
        hidden_states: torch.Tensor,
        k: torch.Tensor | None,
        v: torch.Tensor | None,
    ) -> torch.Tensor:
        """``k``/``v`` None: they are already in the cache (prefill path)."""
        q, _ = self.q_proj_swiftkv(hidden_states)
        q, _ = self.rotary_emb(positions, q, None)
        out = self.attn(q, k, v)
        out, _ = self.o_proj(out)
        return out


class SwiftKVDecoderLayer(nn.Module):
    """A Llama decoder layer whose attention takes precomputed K/V."""

    def __init__(self, vllm_config: VllmConfig, prefix: str) -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.self_attn = SwiftKVAttention(vllm_config, prefix=f"{prefix}.self_attn")
        self.mlp = LlamaMLP(
            hidden_size=config.hidden_size,
            intermediate_size=config.intermediate_size,
            hidden_act=config.hidden_act,
            quant_config=vllm_config.quant_config,
            bias=getattr(config, "mlp_bias", False),
            prefix=f"{prefix}.mlp",
        )
        self.input_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, positions, hidden_states, residual, k, v):
        hidden_states, residual = self.input_layernorm(hidden_states, residual)
        hidden_states = self.self_attn(positions, hidden_states, k, v)
        hidden_states, residual = self.post_attention_layernorm(hidden_states, residual)
        return self.mlp(hidden_states), residual


class LlamaSwiftKVModel(nn.Module):
    """Embedding, the two layer stacks, the boundary projection and the norms."""

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        validate_swiftkv_fields(config)
        _check_engine(vllm_config)
        self.config = config
        self.num_kv_layers = config.num_key_value_layers
        self.num_swiftkv = num_swiftkv_layers(config)
        tp = get_tensor_model_parallel_world_size()
        self.kv_size = config.num_key_value_heads // tp * _head_dim(config)
        self.embed_tokens = VocabParallelEmbedding(
            config.vocab_size, config.hidden_size, quant_config=vllm_config.quant_config
        )
        layers: list[nn.Module] = [
            LlamaDecoderLayer(vllm_config=vllm_config, prefix=f"{prefix}.layers.{i}")
            for i in range(self.num_kv_layers)
        ]
        layers += [
            SwiftKVDecoderLayer(vllm_config, prefix=f"{prefix}.layers.{i}")
            for i in range(self.num_kv_layers, config.num_hidden_layers)
        ]
        self.layers = nn.ModuleList(layers)
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        if self.num_swiftkv:
            self.norm_swiftkv = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
            # Shards: K of every SwiftKV layer, then V of every SwiftKV layer.
            self.swiftkv_kv_proj = MergedColumnParallelLinear(
                config.hidden_size,
                [config.num_key_value_heads * _head_dim(config)] * (2 * self.num_swiftkv),
                bias=bool(getattr(config, "attention_bias", False)),
                quant_config=vllm_config.quant_config,
                prefix=f"{prefix}.swiftkv_kv_proj",
            )
            self.swiftkv_rotary = _rope(config)
        # Speculative decoding samples several tokens per request: keep the full path.
        self.prefill_path_allowed = vllm_config.speculative_config is None
        self._layout: KVLayout | None = None
        self._offsets = OffsetTable()
        # Eager forwards per path and bulk writes per implementation (for tests;
        # replayed CUDA graphs run no Python, so they are not counted).
        self.counts = {"full": 0, "prefill": 0, "write_triton": 0, "write_torch": 0}

    @property
    def swiftkv_layers(self) -> list[SwiftKVDecoderLayer]:
        return list(self.layers[self.num_kv_layers :])

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.embed_tokens(input_ids)

    def boundary_kv(
        self, positions: torch.Tensor, hidden_states: torch.Tensor, residual: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """K (rotated) and V of every SwiftKV layer: ``(tokens, layers * kv_size)`` each."""
        kv_in = self.norm_swiftkv(hidden_states + residual)
        kv, _ = self.swiftkv_kv_proj(kv_in)
        k, v = kv.split(self.num_swiftkv * self.kv_size, dim=-1)
        k, _ = self.swiftkv_rotary(positions, k, None)
        return k, v

    def forward(
        self,
        input_ids: torch.Tensor | None,
        positions: torch.Tensor,
        intermediate_tensors: IntermediateTensors | None = None,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        hidden = inputs_embeds if inputs_embeds is not None else self.embed_input_ids(input_ids)
        residual = None
        for layer in self.layers[: self.num_kv_layers]:
            hidden, residual = layer(positions, hidden, residual)
        if not self.num_swiftkv:
            hidden, _ = self.norm(hidden, residual)
            return hidden
        k, v = self.boundary_kv(positions, hidden, residual)
        plan = self._prefill_plan()
        if plan is None:
            self.counts["full"] += 1
            ks, vs = k.chunk(self.num_swiftkv, dim=-1), v.chunk(self.num_swiftkv, dim=-1)
            for j, layer in enumerate(self.swiftkv_layers):
                hidden, residual = layer(positions, hidden, residual, ks[j], vs[j])
            hidden, _ = self.norm(hidden, residual)
            return hidden
        self.counts["prefill"] += 1
        return self._prefill_forward(plan, positions, hidden, residual, k, v)

    # --- prefill path -------------------------------------------------------

    def _prefill_plan(self):
        """(metadata dict, metadata, slot mapping) when the prefill path applies, else None."""
        if not self.prefill_path_allowed or not is_forward_context_available():
            return None
        from vllm.config import CUDAGraphMode

        ctx = get_forward_context()
        if ctx.cudagraph_runtime_mode == CUDAGraphMode.FULL:
            return None  # a replayed graph must not depend on the batch
        metas, slots = ctx.attn_metadata, ctx.slot_mapping
        if not isinstance(metas, dict) or not isinstance(slots, dict):
            return None
        name = self.swiftkv_layers[0].self_attn.attn.layer_name
        meta = metas.get(name)
        if meta is None or not has_prompt_tokens(meta):
            return None
        return metas, meta, slots.get(name)

    def _cache_views(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        attns = [layer.self_attn.attn for layer in self.swiftkv_layers]
        if self._layout is None:
            self._layout = resolve_layout(
                attns[0].get_attn_backend(), attns[0].head_size, attns[0].kv_cache_dtype
            )
        views = [self._layout.split(a.kv_cache) for a in attns]
        return [kc for kc, _ in views], [vc for _, vc in views]

    def _prefill_forward(self, plan, positions, hidden, residual, k, v) -> torch.Tensor:
        metas, meta, slot_mapping = plan
        num_tokens = hidden.shape[0]
        heads, head = self.kv_size // _head_dim(self.config), _head_dim(self.config)
        if slot_mapping is not None:
            k_caches, v_caches = self._cache_views()
            used = write_kv(
                k.view(num_tokens, self.num_swiftkv, heads, head),
                v.view(num_tokens, self.num_swiftkv, heads, head),
                k_caches,
                v_caches,
                slot_mapping,
                self._offsets,
            )
            self.counts[f"write_{used}"] += 1
        idx = logits_token_indices(meta)
        small = restrict_to_logits_tokens(meta, idx)
        names = [layer.self_attn.attn.layer_name for layer in self.swiftkv_layers]
        saved = {n: metas[n] for n in names}
        h, r, p = hidden[idx], residual[idx], positions[idx]
        try:
            for n in names:
                metas[n] = small
            for layer in self.swiftkv_layers:
                h, r = layer(p, h, r, None, None)
        finally:
            metas.update(saved)
        h, _ = self.norm(h, r)
        out = hidden.clone()
        out.index_copy_(0, idx, h)
        return out


def _check_engine(vllm_config: VllmConfig) -> None:
    cache_dtype = vllm_config.cache_config.cache_dtype
    if cache_dtype != "auto":
        raise SwiftKVUnsupported(
            f"LlamaSwiftKVForCausalLM writes its KV cache in the model dtype; "
            f"kv_cache_dtype={cache_dtype!r} is not supported, use kv_cache_dtype='auto'."
        )
    if vllm_config.parallel_config.pipeline_parallel_size != 1:
        raise SwiftKVUnsupported(
            "LlamaSwiftKVForCausalLM does not support pipeline parallelism; "
            "use pipeline_parallel_size=1."
        )


def _enable_fused_kernels(module: nn.Module) -> None:
    """Use vLLM's own CUDA kernels for every custom op (the model runs uncompiled)."""
    from vllm.platforms import current_platform

    if not current_platform.is_cuda():
        return
    for sub in module.modules():
        if isinstance(sub, CustomOp) and not sub._enforce_enable:
            sub._enforce_enable = True
            sub._forward_method = sub.dispatch_forward(compile_native=False)


_LAYER = re.compile(r"^model\.layers\.(\d+)\.(.+)$")
_STACKED = (
    (".q_proj.", ".qkv_proj.", "q"),
    (".k_proj.", ".qkv_proj.", "k"),
    (".v_proj.", ".qkv_proj.", "v"),
    (".gate_proj.", ".gate_up_proj.", 0),
    (".up_proj.", ".gate_up_proj.", 1),
)


class LlamaSwiftKVForCausalLM(nn.Module):
    """vLLM entry class for ``llama_swiftkv`` checkpoints."""

    packed_modules_mapping = {
        "qkv_proj": ["q_proj", "k_proj", "v_proj"],
        "gate_up_proj": ["gate_proj", "up_proj"],
    }

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.config = config
        self.model = LlamaSwiftKVModel(vllm_config=vllm_config, prefix="model")
        self.lm_head = ParallelLMHead(
            config.vocab_size,
            config.hidden_size,
            quant_config=vllm_config.quant_config,
            prefix="lm_head",
        )
        if config.tie_word_embeddings:
            self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
        self.logits_processor = LogitsProcessor(
            config.vocab_size, scale=getattr(config, "logit_scale", 1.0)
        )
        _enable_fused_kernels(self)

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model.embed_input_ids(input_ids)

    def forward(
        self,
        input_ids: torch.Tensor | None,
        positions: torch.Tensor,
        intermediate_tensors: IntermediateTensors | None = None,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return self.model(input_ids, positions, intermediate_tensors, inputs_embeds)

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor | None:
        return self.logits_processor(self.lm_head, hidden_states)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        """HF Llama names plus the SwiftKV ones; unused projections of SwiftKV layers are dropped."""
        params = dict(self.named_parameters())
        loaded: set[str] = set()
        n_kv, n_swift = self.model.num_kv_layers, self.model.num_swiftkv
        for name, weight in weights:
            if "rotary_emb." in name:
                continue
            if name.startswith("lm_head.") and self.config.tie_word_embeddings:
                continue
            target, shard = self._route(name, n_kv, n_swift)
            if target is None:
                continue
            if target not in params:
                raise ValueError(
                    f"checkpoint tensor {name!r} has no place in LlamaSwiftKVForCausalLM "
                    f"(looked for {target!r}); is num_key_value_layers={n_kv} right?"
                )
            param = params[target]
            loader = getattr(param, "weight_loader", default_weight_loader)
            if shard is None:
                loader(param, weight)
            else:
                loader(param, weight, shard)
            loaded.add(target)
        return loaded

    @staticmethod
    def _route(name: str, n_kv: int, n_swift: int) -> tuple[str | None, object]:
        """Parameter name and shard for a checkpoint tensor (None: not used)."""
        m = _LAYER.match(name)
        if m is None:
            if name.startswith("model.norm_swiftkv.") and n_swift == 0:
                return None, None
            return name, None
        idx, rest = int(m.group(1)), m.group(2)
        if idx >= n_kv:
            j = idx - n_kv
            for proj, shard in (("k_proj_swiftkv", j), ("v_proj_swiftkv", n_swift + j)):
                if rest.startswith(f"self_attn.{proj}."):
                    return f"model.swiftkv_kv_proj.{rest.rsplit('.', 1)[1]}", shard
            if re.match(r"self_attn\.[qkv]_proj\.", rest):
                return None, None  # the layer's own Q/K/V projections are not used
        stacked = _stacked_shard(name)
        if stacked is not None:
            return stacked
        return name, None


def _stacked_shard(name: str) -> tuple[str, object] | None:
    for src, dst, shard in _STACKED:
        if src in name:
            return name.replace(src, dst), shard
    return None
