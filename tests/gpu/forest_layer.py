"""One attention layer's forward through upstream FlashAttention and through the fork.

Shared by the GPU tests and the bench's per-layer check: a real batch of prefix groups
in a paged KV cache (laid out by the backend's own shape and stride order), the real
metadata builders and the real impls of vLLM 0.26.0 and of the fork.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

BLOCK = 16


@dataclasses.dataclass
class LayerBatch:
    common: object  # CommonAttentionMetadata on the GPU
    query: torch.Tensor  # (T, H, D)
    kv_cache: torch.Tensor  # logical shape of the backend
    seq_lens: np.ndarray
    table: np.ndarray
    qsl: np.ndarray


def engine_config(*, heads: int, kv_heads: int, head: int, device: str = "cuda", **arctic):
    """A VllmConfig with a config-only Llama of the given attention shape (no weights)."""
    import tempfile
    from pathlib import Path

    from transformers import LlamaConfig
    from vllm.config import CompilationConfig, CUDAGraphMode, DeviceConfig, ModelConfig, VllmConfig

    folder = Path(tempfile.gettempdir()) / f"forest-llama-{heads}-{kv_heads}-{head}"
    if not (folder / "config.json").is_file():
        LlamaConfig(
            vocab_size=512,
            hidden_size=heads * head,
            intermediate_size=256,
            num_hidden_layers=1,
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            max_position_embeddings=8192,
        ).save_pretrained(folder)
    model = ModelConfig(
        model=str(folder), skip_tokenizer_init=True, max_model_len=8192, dtype="bfloat16"
    )
    return VllmConfig(
        model_config=model,
        device_config=DeviceConfig(device=device),
        # Forest groups only without full CUDA graphs; the mode does not change a layer's output.
        compilation_config=CompilationConfig(cudagraph_mode=CUDAGraphMode.PIECEWISE),
        additional_config={"arctic": arctic} if arctic else {},
    )


class ScaleLayer(torch.nn.Module):
    """The per-layer attributes FlashAttentionImpl.forward reads (unquantized: scales 1)."""

    def __init__(self, device: torch.device) -> None:
        super().__init__()
        one = torch.ones((), dtype=torch.float32, device=device)
        self._q_scale, self._k_scale, self._v_scale = one, one.clone(), one.clone()


def make_batch(
    *,
    groups: list[tuple[int, int]],
    singles: int,
    own: tuple[int, int],
    heads: int,
    kv_heads: int,
    head: int,
    seed: int,
    device: str = "cuda",
    dtype: torch.dtype = torch.bfloat16,
) -> LayerBatch:
    """Decode batch: ``groups`` of (members, shared tokens) plus ``singles`` lone requests."""
    from vllm.v1.attention.backend import CommonAttentionMetadata

    from arctic_inference.vllm.attention.flash_attn_fork import ForestFlashAttentionBackend
    from arctic_inference.vllm.attention.kv_layout import allocate_kv_cache

    rng = np.random.default_rng(seed)
    reqs = [
        (g, shared, int(rng.integers(*own)))
        for g, (n, shared) in enumerate(groups)
        for _ in range(n)
    ]
    reqs += [(None, 0, int(rng.integers(*own)) + 64) for _ in range(singles)]
    reqs = [reqs[i] for i in rng.permutation(len(reqs))]
    seq_lens = np.asarray([s + o for _, s, o in reqs])
    total = int(sum(-(-s // BLOCK) for s in seq_lens)) + sum(s // BLOCK for _, s in groups) + 8
    phys = iter(rng.permutation(np.arange(1, total)).tolist())
    shared = {g: [next(phys) for _ in range(s // BLOCK)] for g, (_, s) in enumerate(groups)}
    width = int(max(-(-s // BLOCK) for s in seq_lens)) + 1
    table = np.zeros((len(reqs), width), dtype=np.int32)
    for i, (g, _, _) in enumerate(reqs):
        row = list(shared[g]) if g is not None else []
        row += [next(phys) for _ in range(-(-int(seq_lens[i]) // BLOCK) - len(row))]
        table[i, : len(row)] = row
    kv = allocate_kv_cache(
        ForestFlashAttentionBackend,
        num_blocks=total + 1,
        block_size=BLOCK,
        num_kv_heads=kv_heads,
        head_size=head,
        dtype=dtype,
        device=device,
    )
    kv.copy_(torch.randn(kv.shape, generator=torch.Generator().manual_seed(seed)).to(dtype))
    n = len(reqs)
    qsl = np.arange(n + 1, dtype=np.int32)
    query = (
        torch.randn((n, heads, head), generator=torch.Generator().manual_seed(seed + 1))
        .to(dtype)
        .to(device)
    )
    sl = torch.from_numpy(seq_lens.astype(np.int32))
    common = CommonAttentionMetadata(
        query_start_loc=torch.from_numpy(qsl).to(device),
        query_start_loc_cpu=torch.from_numpy(qsl),
        seq_lens=sl.to(device),
        num_reqs=n,
        num_actual_tokens=n,
        max_query_len=1,
        max_seq_len=int(seq_lens.max()),
        block_table_tensor=torch.from_numpy(table).to(device),
        slot_mapping=torch.zeros(n, dtype=torch.int64, device=device),
        seq_lens_cpu_upper_bound=sl,
    )
    return LayerBatch(common, query, kv, seq_lens, table, qsl)


def run_layer(
    module,
    vllm_config,
    batch: LayerBatch,
    *,
    heads: int,
    kv_heads: int,
    head: int,
    common_prefix_len: int = 0,
    static_splits: int | None = None,
) -> tuple[torch.Tensor, object]:
    """Build metadata with ``module``'s builder and run its impl's forward.

    ``static_splits`` (the fork only): plan the step statically, as a full-graph engine
    does, run it eagerly, and give FA3 that split count (full decode graphs pass the
    builder's cap; 0 lets FA3 choose, as a piecewise step does).
    """
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    from arctic_inference.vllm.attention.static_plan import StaticPlanBuffers

    device = batch.query.device
    spec = FullAttentionSpec(
        block_size=BLOCK, num_kv_heads=kv_heads, head_size=head, dtype=batch.query.dtype
    )
    with set_current_vllm_config(vllm_config):
        builder = module.FlashAttentionMetadataBuilder(spec, ["layer"], vllm_config, device)
        if static_splits is not None:
            builder.forest.full_cuda_graph = True
            builder.forest.static = StaticPlanBuffers(len(batch.seq_lens))
        metadata = builder.build(common_prefix_len, batch.common)
        if static_splits is not None:
            assert metadata.forest is not None and metadata.forest.static
            metadata = dataclasses.replace(metadata, max_num_splits=static_splits)
        impl = module.FlashAttentionImpl(heads, head, head**-0.5, kv_heads, None, None, "auto")
        out = torch.empty_like(batch.query)
        impl.forward(
            ScaleLayer(device),
            batch.query,
            batch.query[:, :kv_heads],
            batch.query[:, :kv_heads],
            batch.kv_cache,
            metadata,
            out,
        )
    torch.cuda.synchronize()
    return out, metadata


def float32_reference(batch: LayerBatch, *, head: int) -> torch.Tensor:
    from arctic_inference.vllm.attention.flash_attn_fork import ForestFlashAttentionBackend
    from arctic_inference.vllm.attention.kv_layout import kv_cache_layout, split_kv_cache
    from arctic_inference.vllm.attention.reference import reference_varlen_attention

    key, value = split_kv_cache(
        batch.kv_cache.float(), kv_cache_layout(ForestFlashAttentionBackend), head
    )
    return reference_varlen_attention(
        q=batch.query.float(),
        k=key,
        v=value,
        cu_seqlens_q=torch.from_numpy(batch.qsl).to(batch.query.device),
        max_seqlen_q=1,
        seqused_k=torch.from_numpy(batch.seq_lens.astype(np.int32)).to(batch.query.device),
        max_seqlen_k=int(batch.seq_lens.max()),
        softmax_scale=head**-0.5,
        causal=True,
        block_table=torch.from_numpy(batch.table).to(batch.query.device),
    )
