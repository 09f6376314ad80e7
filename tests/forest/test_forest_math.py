"""The forest math (grouped prefix + own suffix + LSE merge) equals plain attention.

The kernels are the PyTorch reference, so this checks the plan and the forward: group
order gathers, shifted suffix block tables, suffix KV lengths, the merge and the
scatter back. The reference itself is checked against torch's SDPA first.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arctic_inference.vllm.attention.forest_config import ForestConfig
from arctic_inference.vllm.attention.forward import forest_attention
from arctic_inference.vllm.attention.grouping import find_prefix_groups
from arctic_inference.vllm.attention.plan import build_forest_plan
from arctic_inference.vllm.attention.reference import (
    reference_merge_attn_states,
    reference_varlen_attention,
)

BLOCK = 16
HEADS, KV_HEADS, HEAD = 4, 2, 16


def _fork_backend():
    from forest_env import cpu_config
    from vllm.config import set_current_vllm_config

    with set_current_vllm_config(cpu_config()):
        from arctic_inference.vllm.attention.flash_attn_fork import ForestFlashAttentionBackend
    return ForestFlashAttentionBackend


def _paged_batch(
    rng: np.random.Generator,
    groups: list[tuple[int, int]],
    singles: int,
    own_tokens: tuple[int, int],
    query_lens: list[int] | None = None,
):
    """A batch of requests in shuffled order over shuffled physical blocks.

    ``groups``: (members, shared tokens) per group (shared tokens block-aligned); each
    request then has ``own_tokens`` (a range) of its own KV, the last ``query_len`` of
    which are this step's queries.
    """
    from arctic_inference.vllm.attention.kv_layout import (
        allocate_kv_cache,
        kv_cache_layout,
        split_kv_cache,
    )

    requests = []  # (shared group id or None, shared tokens, own tokens)
    for gid, (members, shared) in enumerate(groups):
        requests += [(gid, shared, int(rng.integers(*own_tokens))) for _ in range(members)]
    requests += [(None, 0, int(rng.integers(*own_tokens)) + 40) for _ in range(singles)]
    order = rng.permutation(len(requests))
    requests = [requests[i] for i in order]
    if query_lens is None:
        query_lens = [1] * len(requests)
    seq_lens = [shared + own for _, shared, own in requests]
    need = sum(-(-s // BLOCK) for s in seq_lens) + sum(shared // BLOCK for _, shared in groups) + 4
    physical = iter(rng.permutation(np.arange(1, need + 1)).tolist())
    shared_blocks = {
        gid: [next(physical) for _ in range(shared // BLOCK)]
        for gid, (_, shared) in enumerate(groups)
    }
    width = max(-(-s // BLOCK) for s in seq_lens) + 2
    table = np.zeros((len(requests), width), dtype=np.int32)
    for i, (gid, _shared, _own) in enumerate(requests):
        blocks = list(shared_blocks[gid]) if gid is not None else []
        blocks += [next(physical) for _ in range(-(-seq_lens[i] // BLOCK) - len(blocks))]
        table[i, : len(blocks)] = blocks
    from forest_env import cpu_config
    from vllm.config import set_current_vllm_config

    backend = _fork_backend()
    with set_current_vllm_config(cpu_config()):  # the layout reads the current config
        kv = allocate_kv_cache(
            backend,
            num_blocks=need + 2,
            block_size=BLOCK,
            num_kv_heads=KV_HEADS,
            head_size=HEAD,
            dtype=torch.float32,
        )
        layout = kv_cache_layout(backend)
    kv.copy_(torch.from_numpy(rng.standard_normal(tuple(kv.shape)).astype(np.float32)))
    key, value = split_kv_cache(kv, layout, HEAD)
    qsl = np.zeros(len(requests) + 1, dtype=np.int64)
    qsl[1:] = np.cumsum(query_lens)
    query = torch.from_numpy(rng.standard_normal((int(qsl[-1]), HEADS, HEAD)).astype(np.float32))
    computed = np.asarray(seq_lens) - np.asarray(query_lens)
    return dict(
        table=table,
        key=key,
        value=value,
        qsl=qsl,
        query=query,
        seq_lens=np.asarray(seq_lens),
        computed=computed,
        requests=requests,
    )


def _plain_attention(batch, scale):
    return reference_varlen_attention(
        q=batch["query"],
        k=batch["key"],
        v=batch["value"],
        cu_seqlens_q=torch.from_numpy(batch["qsl"]).int(),
        max_seqlen_q=int(np.diff(batch["qsl"]).max()),
        seqused_k=torch.from_numpy(batch["seq_lens"]).int(),
        max_seqlen_k=int(batch["seq_lens"].max()),
        softmax_scale=scale,
        causal=True,
        block_table=torch.from_numpy(batch["table"]),
    )


def _forest(batch, scale, config=ForestConfig(), softcap=0.0):
    grouping = find_prefix_groups(batch["table"], batch["computed"], BLOCK, config)
    assert grouping is not None
    plan = build_forest_plan(
        grouping,
        query_start_loc_cpu=batch["qsl"],
        block_table_cpu=batch["table"],
        block_table=torch.from_numpy(batch["table"]),
        seq_lens=torch.from_numpy(batch["seq_lens"]).int(),
        max_seq_len=int(batch["seq_lens"].max()),
        block_size=BLOCK,
    )
    return run_forest_on_cpu(batch, plan, scale, softcap), grouping


def run_forest_on_cpu(batch, plan, scale, softcap=0.0):
    """``forest_attention`` of ``batch`` through ``plan`` with the CPU reference kernels.

    The output starts as NaN, so a row the plan forgets to write shows up in any comparison.
    """
    out = torch.full_like(batch["query"], float("nan"))
    forest_attention(
        output=out,
        query=batch["query"],
        key_cache=batch["key"],
        value_cache=batch["value"],
        plan=plan,
        cu_seqlens_q=torch.from_numpy(batch["qsl"]).int(),
        max_query_len=int(np.diff(batch["qsl"]).max()),
        softmax_scale=scale,
        softcap=softcap,
        attn_fn=reference_varlen_attention,
        merge_fn=reference_merge_attn_states,
    )
    return out


def test_reference_attention_matches_torch_sdpa():
    rng = np.random.default_rng(1)
    batch = _paged_batch(
        rng, groups=[(3, 32)], singles=1, own_tokens=(5, 30), query_lens=[3, 1, 2, 4]
    )
    scale = HEAD**-0.5
    ours = _plain_attention(batch, scale)
    for i in range(len(batch["requests"])):
        n = int(batch["seq_lens"][i])
        blocks = torch.from_numpy(batch["table"][i, : -(-n // BLOCK)]).long()
        k = (
            batch["key"][blocks]
            .reshape(-1, KV_HEADS, HEAD)[:n]
            .repeat_interleave(2, 1)
            .transpose(0, 1)
        )
        v = (
            batch["value"][blocks]
            .reshape(-1, KV_HEADS, HEAD)[:n]
            .repeat_interleave(2, 1)
            .transpose(0, 1)
        )
        s, e = int(batch["qsl"][i]), int(batch["qsl"][i + 1])
        q = batch["query"][s:e].transpose(0, 1)
        mask = torch.arange(n)[None, :] <= (torch.arange(e - s)[:, None] + n - (e - s))
        want = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=scale
        )
        torch.testing.assert_close(ours[s:e], want.transpose(0, 1), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forest_equals_full_attention_on_several_groups(seed):
    rng = np.random.default_rng(seed)
    batch = _paged_batch(rng, groups=[(5, 64), (4, 128), (3, 32)], singles=3, own_tokens=(3, 40))
    scale = HEAD**-0.5
    out, grouping = _forest(batch, scale)
    assert len(grouping.groups) == 3  # every group found; singles stay out
    assert grouping.grouped_requests == 12
    torch.testing.assert_close(out, _plain_attention(batch, scale), atol=2e-5, rtol=2e-5)


def test_forest_equals_full_attention_with_multi_token_queries_and_softcap():
    rng = np.random.default_rng(7)
    groups, singles = [(4, 48), (4, 96)], 2
    query_lens = [int(x) for x in rng.integers(1, 5, size=10)]
    batch = _paged_batch(
        rng, groups=groups, singles=singles, own_tokens=(6, 30), query_lens=query_lens
    )
    scale = HEAD**-0.5
    out, grouping = _forest(batch, scale, softcap=5.0)
    want = reference_varlen_attention(
        q=batch["query"],
        k=batch["key"],
        v=batch["value"],
        cu_seqlens_q=torch.from_numpy(batch["qsl"]).int(),
        max_seqlen_q=4,
        seqused_k=torch.from_numpy(batch["seq_lens"]).int(),
        max_seqlen_k=int(batch["seq_lens"].max()),
        softmax_scale=scale,
        causal=True,
        block_table=torch.from_numpy(batch["table"]),
        softcap=5.0,
    )
    assert len(grouping.groups) == 2
    torch.testing.assert_close(out, want, atol=2e-5, rtol=2e-5)


def test_a_grouped_prefix_never_reaches_past_computed_tokens():
    # A member whose shared blocks are still being filled this step (its queries sit
    # inside the shared range) must cap the group's prefix: non-causal over its own
    # queries' KV would be wrong.
    rng = np.random.default_rng(3)
    batch = _paged_batch(rng, groups=[(4, 64)], singles=4, own_tokens=(4, 20))
    members = [i for i, r in enumerate(batch["requests"]) if r[0] == 0]
    batch["computed"][members[0]] = 40  # only 2 full blocks computed
    grouping = find_prefix_groups(batch["table"], batch["computed"], BLOCK, ForestConfig())
    assert grouping is not None
    for group in grouping.groups:
        assert all(group.prefix_blocks * BLOCK <= batch["computed"][r] for r in group.requests)
    # All four sharing 2 blocks saves 3 * 2 reads; the other three sharing 4 saves 2 * 4.
    assert [(g.requests, g.prefix_blocks) for g in grouping.groups] == [(tuple(members[1:]), 4)]


def test_upload_returns_every_array_with_its_shape_and_values():
    import numpy as np
    import torch

    from arctic_inference.vllm.attention.plan import upload

    arrays = [
        np.array([3, 1, 2], dtype=np.int32),
        np.arange(12, dtype=np.int64).reshape(3, 4) * -5,
        np.zeros(0, dtype=np.int32),
        np.array([[7]], dtype=np.int32),
    ]
    got = upload(arrays, torch.device("cpu"))
    assert [tuple(t.shape) for t in got] == [(3,), (3, 4), (0,), (1, 1)]
    assert all(t.dtype == torch.int64 for t in got)
    for tensor, array in zip(got, arrays):
        assert tensor.tolist() == array.tolist()
    assert upload([], torch.device("cpu")) == []
