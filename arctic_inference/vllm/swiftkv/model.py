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
* **prefill** (a batch with prompt tokens): the higher layers'
  K/V for all tokens go into their caches in one bulk write
  (:mod:`.kv_write`), then only the last scheduled token of each request -
  the one vLLM samples from - runs the higher layers, attending over the
  cache with metadata restricted to those tokens (:mod:`.metadata`). The
  other rows of the returned hidden states hold the bottom-layer state and
  are never sampled, which is why prompt logprobs are refused
  (:mod:`.request_check`).

Compilation follows vLLM's LlamaModel: the two layer stacks are separate
``@support_torch_compile`` modules (:class:`SwiftKVBottomStack`,
:class:`SwiftKVTopStack`), each Inductor-compiled and split into piecewise
CUDA graphs. Everything that depends on the batch - which path, the bulk
write, the gather of the logits tokens, the swapped metadata - runs between
the two compiled regions. The top stack always receives K/V tensors (in the
prefill path those of the logits tokens, which its attention rewrites to the
same slots), so one traced graph serves both paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import torch
from torch import nn
from vllm.compilation.backends import set_model_tag
from vllm.config import CUDAGraphMode, VllmConfig
from vllm.distributed import get_tensor_model_parallel_world_size
from vllm.forward_context import get_forward_context, is_forward_context_available
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
from arctic_inference.vllm.swiftkv.stacks import SwiftKVBottomStack, SwiftKVTopStack
from arctic_inference.vllm.swiftkv.top_batch import graph_size, pad_indices


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


@dataclass
class _PrefillPlan:
    """What the prefill path swaps in the forward context for the SwiftKV layers."""

    metas: dict
    slots: dict
    meta: object


class _TopInputs:
    """Persistent input rows of the top stack, so piecewise CUDA graphs replay on them.

    A captured graph reads its inputs at the addresses seen at capture time, and
    the top stack's inputs are gathered or copied per batch; they are copied
    into these buffers first. Rows: the largest CUDA-graph capture size.
    """

    def __init__(self, rows: int, hidden: int, kv: int, dtype: torch.dtype) -> None:
        self.rows = rows
        self.positions = torch.zeros(rows, dtype=torch.int64)
        self.hidden = torch.zeros(rows, hidden, dtype=dtype)
        self.residual = torch.zeros(rows, hidden, dtype=dtype)
        self.k = torch.zeros(rows, kv, dtype=dtype)
        self.v = torch.zeros(rows, kv, dtype=dtype)

    def fill(self, index: torch.Tensor | None, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Copy ``tensors`` (rows ``index`` of them, or all) into the buffers; their views."""
        n = tensors[0].shape[0] if index is None else index.shape[0]
        bufs = (self.positions, self.hidden, self.residual, self.k, self.v)
        out = []
        for buf, t in zip(bufs, tensors):
            buf[:n].copy_(t if index is None else t[index])
            out.append(buf[:n])
        return tuple(out)


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
        # Two compilation units, each with its own compiled graph and CUDA graphs.
        with set_model_tag("swiftkv_bottom"):
            self.bottom = SwiftKVBottomStack(
                vllm_config=vllm_config, prefix=f"{prefix}.bottom", owner=self
            )
        self.top: SwiftKVTopStack | None = None
        self._top_inputs: _TopInputs | None = None
        if self.num_swiftkv:
            with set_model_tag("swiftkv_top"):
                self.top = SwiftKVTopStack(
                    vllm_config=vllm_config, prefix=f"{prefix}.top", owner=self
                )
            rows = _graph_rows(vllm_config)
            if rows:
                self._top_inputs = _TopInputs(
                    rows,
                    config.hidden_size,
                    self.num_swiftkv * self.kv_size,
                    vllm_config.model_config.dtype,
                )
        self._compilation_config = vllm_config.compilation_config
        # Batch descriptors under which the top stack's piecewise graphs exist.
        self._top_graph_keys: set = set()
        # Speculative decoding samples several tokens per request: keep the full path.
        self.prefill_path_allowed = vllm_config.speculative_config is None
        self._layout: KVLayout | None = None
        self._offsets = OffsetTable()
        # Forwards per path, top-stack runs on piecewise graphs, and bulk writes per
        # implementation (for tests; fully replayed CUDA graphs run no Python).
        self.counts = {
            "full": 0,
            "prefill": 0,
            "top_graph": 0,
            "write_triton": 0,
            "write_torch": 0,
        }

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
        out = self.bottom(input_ids, positions, inputs_embeds)
        if not self.num_swiftkv:
            return out[0]
        hidden, residual, k, v = out
        plan = self._prefill_plan()
        if plan is None:
            self.counts["full"] += 1
            return self._full_forward(positions, hidden, residual, k, v)
        self.counts["prefill"] += 1
        return self._prefill_forward(plan, positions, hidden, residual, k, v)

    # --- full path ----------------------------------------------------------

    def _full_forward(self, positions, hidden, residual, k, v) -> torch.Tensor:
        if not is_forward_context_available():
            return self.top(positions, hidden, residual, k, v)
        ctx = get_forward_context()
        if ctx.cudagraph_runtime_mode != CUDAGraphMode.PIECEWISE:
            return self.top(positions, hidden, residual, k, v)
        key = ctx.batch_descriptor
        fits = self._top_inputs is not None and positions.shape[0] <= self._top_inputs.rows
        if not fits or (key not in self._top_graph_keys and not _capturing_allowed()):
            # No graph of this size exists and none may be captured now: run compiled only.
            with _graph_mode(ctx, CUDAGraphMode.NONE, key):
                return self.top(positions, hidden, residual, k, v)
        inputs = self._top_inputs.fill(None, positions, hidden, residual, k, v)
        self._top_graph_keys.add(key)
        return self.top(*inputs)

    # --- prefill path -------------------------------------------------------

    def _prefill_plan(self) -> _PrefillPlan | None:
        """The forward context's tables when the prefill path applies, else None."""
        if not self.prefill_path_allowed or not is_forward_context_available():
            return None
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
        return _PrefillPlan(metas, slots, meta)

    def _cache_views(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        attns = [layer.self_attn.attn for layer in self.swiftkv_layers]
        if self._layout is None:
            self._layout = resolve_layout(
                attns[0].get_attn_backend(), attns[0].head_size, attns[0].kv_cache_dtype
            )
        views = [self._layout.split(a.kv_cache) for a in attns]
        return [kc for kc, _ in views], [vc for _, vc in views]

    def _bulk_write(self, slot_mapping: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        num_tokens = k.shape[0]
        head = _head_dim(self.config)
        heads = self.kv_size // head
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

    def _prefill_forward(self, plan: _PrefillPlan, positions, hidden, residual, k, v):
        names = [layer.self_attn.attn.layer_name for layer in self.swiftkv_layers]
        slot_mapping = plan.slots.get(names[0])
        if slot_mapping is not None:
            self._bulk_write(slot_mapping, k, v)
        idx = logits_token_indices(plan.meta)
        small = restrict_to_logits_tokens(plan.meta, idx)
        # The bottom stack's output may live in a CUDA-graph pool the top stack reuses.
        out = hidden.clone()
        ctx = get_forward_context()
        mode, key, rows = self._top_graph_choice(ctx, idx.shape[0])
        if mode == CUDAGraphMode.PIECEWISE:
            inputs = self._top_inputs.fill(
                pad_indices(idx, rows), positions, hidden, residual, k, v
            )
            self.counts["top_graph"] += 1
        else:
            inputs = (positions[idx], hidden[idx], residual[idx], k[idx], v[idx])
        saved_metas = {n: plan.metas[n] for n in names}
        saved_slots = {n: plan.slots.get(n) for n in names}
        small_slots = {n: s[idx] for n, s in saved_slots.items() if s is not None}
        try:
            for n in names:
                plan.metas[n] = small
                if n in small_slots:
                    plan.slots[n] = small_slots[n]
            with _graph_mode(ctx, mode, key):
                h = self.top(*inputs)
        finally:
            plan.metas.update(saved_metas)
            for n, s in saved_slots.items():
                if s is not None:
                    plan.slots[n] = s
        out.index_copy_(0, idx, h[: idx.shape[0]])
        return out

    def _top_graph_choice(self, ctx, num_logits: int):
        """(runtime mode, batch descriptor, rows) for the top stack in the prefill path.

        Piecewise graphs are used when the padded logits count has a captured
        graph (seen in the full path); otherwise the compiled code runs without
        graphs, never capturing at serving time.
        """
        rows = graph_size(num_logits, self._compilation_config.cudagraph_capture_sizes or [])
        base = ctx.batch_descriptor
        if rows is None or base is None or self._top_inputs is None or rows > self._top_inputs.rows:
            return CUDAGraphMode.NONE, base, num_logits
        key = replace(base, num_tokens=rows, num_reqs=None, uniform=False)
        if key not in self._top_graph_keys:
            return CUDAGraphMode.NONE, base, num_logits
        return CUDAGraphMode.PIECEWISE, key, rows


def _graph_rows(vllm_config: VllmConfig) -> int:
    """Rows the top stack's graphs can take: the largest capture size (0: no graphs)."""
    cc = vllm_config.compilation_config
    if cc.cudagraph_mode is None or not cc.cudagraph_mode.has_piecewise_cudagraphs():
        return 0
    return int(cc.max_cudagraph_capture_size or 0)


def _capturing_allowed() -> bool:
    from vllm.compilation import monitor

    return bool(monitor.cudagraph_capturing_enabled)


@contextmanager
def _graph_mode(ctx, mode: CUDAGraphMode, key) -> Iterator[None]:
    """The forward context's CUDA-graph mode and batch descriptor, set for one call."""
    saved = (ctx.cudagraph_runtime_mode, ctx.batch_descriptor)
    ctx.cudagraph_runtime_mode, ctx.batch_descriptor = mode, key
    try:
        yield
    finally:
        ctx.cudagraph_runtime_mode, ctx.batch_descriptor = saved


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
