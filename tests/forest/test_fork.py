"""The declared fork: its header, how far it is from upstream, and its metadata builder.

The builder runs on the CPU (no FlashAttention kernel is called while building), so
the fork's builder is compared with vLLM's own on the same real batch: with the
feature off every upstream field is equal and no plan is attached.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import torch
from real_scheduler import BLOCK_SIZE, RunnerBlockTable, finish_step, make_request, make_scheduler

import arctic_inference

FORK = Path(arctic_inference.__file__).parent / "vllm" / "attention" / "flash_attn_fork.py"
UPSTREAM_REL = "vllm/v1/attention/backends/flash_attn.py"
# The only upstream definitions the fork changes (each change marked "Forest:").
CHANGED = {
    "FlashAttentionMetadata",
    "FlashAttentionMetadataBuilder.__init__",
    "FlashAttentionMetadataBuilder.build",
    "FlashAttentionMetadataBuilder.update_block_table",
    "FlashAttentionMetadataBuilder.use_cascade_attention",
    "FlashAttentionImpl.forward",
}


def _upstream_text() -> str:
    import vllm

    return (Path(vllm.__file__).parent.parent / UPSTREAM_REL).read_text()


def _definitions(text: str) -> dict[str, str]:
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            if isinstance(node, ast.ClassDef):  # the class's own statements; methods below
                own = [item for item in node.body if not isinstance(item, ast.FunctionDef)]
                out[node.name] = "".join(ast.dump(item) for item in [*node.bases, *own])
            else:
                out[node.name] = ast.dump(node)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        out[f"{node.name}.{item.name}"] = ast.dump(item)
    return out


def test_fork_header_is_read_by_rebasekit():
    from rebasekit.analysis.forkdecl import header_decl

    decl = header_decl("arctic_inference/vllm/attention/flash_attn_fork.py", FORK.read_text())
    assert decl is not None
    assert (decl.upstream_path, decl.version) == (UPSTREAM_REL, "0.26.0")
    import vllm

    assert vllm.__version__.startswith(decl.version)


def test_fork_changes_only_the_marked_definitions():
    ours, theirs = _definitions(FORK.read_text()), _definitions(_upstream_text())
    assert set(theirs) <= set(ours)  # nothing upstream dropped
    changed = {name for name in theirs if ours[name] != theirs[name]}
    assert changed == CHANGED
    assert set(ours) - set(theirs) == {"ForestFlashAttentionBackend"}
    text = FORK.read_text()
    assert text.count("# Forest:") == 6


def _real_batch(model_dir):
    """A decode step of 4 prompts x 4 samples (200-token prompts) from the real scheduler."""
    from vllm.v1.attention.backend import CommonAttentionMetadata

    rng = np.random.default_rng(5)
    scheduler = make_scheduler(model_dir)
    order = []
    for p in range(4):
        prompt = rng.integers(0, 256, 200).tolist()
        for s in range(4):
            scheduler.add_request(make_request(f"p{p}-s{s}", prompt))
            order.append(f"p{p}-s{s}")
    table = RunnerBlockTable()
    out = scheduler.schedule()
    table.update(out)
    finish_step(scheduler, out)
    out = scheduler.schedule()
    table.update(out)
    num_reqs = len(order)
    computed = table.num_computed()
    qsl = torch.arange(num_reqs + 1, dtype=torch.int32)
    seq_lens = torch.from_numpy(computed + 1).int()
    blocks = torch.from_numpy(table.numpy().copy()).int()
    common = CommonAttentionMetadata(
        query_start_loc=qsl,
        query_start_loc_cpu=qsl.clone(),
        seq_lens=seq_lens,
        num_reqs=num_reqs,
        num_actual_tokens=num_reqs,
        max_query_len=1,
        max_seq_len=int(seq_lens.max()),
        block_table_tensor=blocks,
        slot_mapping=torch.zeros(num_reqs, dtype=torch.int64),
        seq_lens_cpu_upper_bound=seq_lens.clone(),
    )
    return common, table


def _builders(model_dir, **arctic):
    from forest_env import cpu_config
    from vllm.config import set_current_vllm_config
    from vllm.v1.attention.backends import flash_attn as upstream
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    from arctic_inference.vllm.attention import flash_attn_fork as fork

    config = cpu_config(model_dir, **arctic)
    spec = FullAttentionSpec(
        block_size=BLOCK_SIZE, num_kv_heads=2, head_size=16, dtype=torch.bfloat16
    )
    with set_current_vllm_config(config):
        theirs = upstream.FlashAttentionMetadataBuilder(spec, ["l0"], config, torch.device("cpu"))
        ours = fork.FlashAttentionMetadataBuilder(spec, ["l0"], config, torch.device("cpu"))
    return theirs, ours


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    return a == b


def _upstream_fields_equal(theirs, ours) -> list[str]:
    return [
        f.name
        for f in dataclasses.fields(theirs)
        if not _same(getattr(theirs, f.name), getattr(ours, f.name))
    ]


def test_builder_with_forest_off_builds_upstream_metadata(tiny_llama_dir, distributed_cpu):
    theirs, ours = _builders(tiny_llama_dir)
    common, _ = _real_batch(tiny_llama_dir)
    assert ours.forest is None
    want, got = theirs.build(0, common), ours.build(0, common)
    assert _upstream_fields_equal(want, got) == []
    assert got.forest is None


def test_builder_with_forest_on_adds_a_plan_and_keeps_upstream_fields(
    tiny_llama_dir, distributed_cpu
):
    theirs, ours = _builders(tiny_llama_dir, forest_cascade_attn_configs="{}")
    common, table = _real_batch(tiny_llama_dir)
    assert ours.forest is not None
    want, got = theirs.build(0, common), ours.build(0, common)
    assert _upstream_fields_equal(want, got) == []
    plan = got.forest
    assert plan is not None and plan.num_groups == 4
    assert plan.prefix_seqused_k.tolist() == [12 * BLOCK_SIZE] * 4
    assert plan.prefix_cu_seqlens_q.tolist() == [0, 4, 8, 12, 16]
    rows = table.numpy()
    assert torch.equal(plan.suffix_block_table[:, 0], torch.from_numpy(rows[:, 12]).int())
    assert plan.suffix_seqused_k.tolist() == (common.seq_lens - 12 * BLOCK_SIZE).tolist()
    # vLLM's single-prefix cascade is left to forest when forest is on.
    assert not ours.use_cascade_attention(
        common_prefix_len=1024,
        query_lens=np.ones(16, dtype=np.int32),
        num_query_heads=4,
        num_kv_heads=2,
        use_alibi=False,
        use_sliding_window=False,
        use_local_attention=False,
        num_sms=132,
        dcp_world_size=1,
    )
    # A block table swapped in by update_block_table drops the plan (grouped on the old one).
    assert (
        ours.update_block_table(got, common.block_table_tensor, common.slot_mapping).forest is None
    )


def test_builder_with_forest_on_skips_small_batches(tiny_llama_dir, distributed_cpu):
    _, ours = _builders(tiny_llama_dir, forest_cascade_attn_configs="{}")
    common, _ = _real_batch(tiny_llama_dir)
    small = common.replace(
        num_reqs=7,
        num_actual_tokens=7,
        query_start_loc=common.query_start_loc[:8],
        query_start_loc_cpu=common.query_start_loc_cpu[:8],
        seq_lens=common.seq_lens[:7],
        block_table_tensor=common.block_table_tensor[:7],
        slot_mapping=common.slot_mapping[:7],
        seq_lens_cpu_upper_bound=common.seq_lens_cpu_upper_bound[:7],
    )
    assert ours.build(0, small).forest is None
    assert ours.forest.last_reason == "fewer than 8 requests"


class _DropForestStatements(ast.NodeTransformer):
    """Remove every statement that mentions forest (outermost first), count them."""

    def __init__(self) -> None:
        self.dropped = 0

    @staticmethod
    def _is_definition(node: ast.stmt) -> bool:
        """Classes and functions are kept and searched inside, never dropped whole."""
        return isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))

    @staticmethod
    def _mentions_forest(node: ast.AST) -> bool:
        for sub in ast.walk(node):
            name = getattr(sub, "id", None) or getattr(sub, "attr", None)
            if isinstance(name, str) and "forest" in name.lower():
                return True
        return False

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                kept = [s for s in stmts if self._is_definition(s) or not self._mentions_forest(s)]
                self.dropped += len(stmts) - len(kept)
                setattr(node, field, kept)
        return super().generic_visit(node)


def test_with_forest_statements_removed_every_changed_definition_is_upstreams():
    """What the fork adds are statements guarded by (or assigning) forest state and
    nothing else: with them removed, the builder's ``__init__``/``build``/
    ``update_block_table``/``use_cascade_attention``, the impl's ``forward`` and the
    metadata class are upstream's, statement for statement. With no plan
    (``forest is None``) those statements do nothing, so the fork runs upstream's code."""
    fork_tree, upstream_tree = ast.parse(FORK.read_text()), ast.parse(_upstream_text())
    dropper = _DropForestStatements()
    stripped = _definitions(ast.unparse(dropper.visit(fork_tree)))
    theirs = _definitions(ast.unparse(upstream_tree))
    # One statement per "Forest:" edit in upstream's definitions.
    assert dropper.dropped == 6
    assert set(stripped) - {"ForestFlashAttentionBackend"} == set(theirs)
    assert [name for name in CHANGED if stripped[name] != theirs[name]] == []


def _mixed_batch(common):
    """The same requests as a mixed step: three of them have 3-, 5- and 9-token queries."""
    q = np.ones(common.num_reqs, dtype=np.int32)
    q[[0, 5, 9]] = [3, 5, 9]
    qsl = torch.from_numpy(np.concatenate([[0], np.cumsum(q)])).int()
    seq_lens = common.seq_lens + torch.from_numpy(q - 1).int()
    n = int(q.sum())
    return common.replace(
        query_start_loc=qsl,
        query_start_loc_cpu=qsl.clone(),
        seq_lens=seq_lens,
        num_actual_tokens=n,
        max_query_len=int(q.max()),
        max_seq_len=int(seq_lens.max()),
        slot_mapping=torch.zeros(n, dtype=torch.int64),
        seq_lens_cpu_upper_bound=seq_lens.clone(),
    )


def test_builder_with_forest_off_equals_upstream_on_mixed_and_cascade_steps(
    tiny_llama_dir, distributed_cpu
):
    theirs, ours = _builders(tiny_llama_dir)
    decode, _ = _real_batch(tiny_llama_dir)
    mixed = _mixed_batch(decode)
    for common, prefix in ((mixed, 0), (decode, 4 * BLOCK_SIZE), (mixed, 4 * BLOCK_SIZE)):
        want = theirs.build(prefix, common)
        got = ours.build(prefix, common)
        assert want.use_cascade == (prefix > 0) == got.use_cascade
        assert _upstream_fields_equal(want, got) == []
        assert got.forest is None
        swapped = common.block_table_tensor.flip(0).contiguous()
        want_up = theirs.update_block_table(want, swapped, common.slot_mapping)
        got_up = ours.update_block_table(got, swapped, common.slot_mapping)
        assert _upstream_fields_equal(want_up, got_up) == [] and got_up.forest is None
    # vLLM's single-prefix cascade decision is upstream's when forest is off.
    mixed_lens = np.ones(16, dtype=np.int32)
    mixed_lens[3] = 2
    decisions = []
    for prefix_len, lens in (
        (1024, mixed_lens),  # not FlashDecoding: cascade
        (1024, np.ones(16, dtype=np.int32)),  # FlashDecoding: the performance model decides
        (16, mixed_lens),  # prefix too short
        (1024, mixed_lens[:2]),  # too few requests
    ):
        kwargs = dict(
            common_prefix_len=prefix_len,
            query_lens=lens,
            num_query_heads=4,
            num_kv_heads=2,
            use_alibi=False,
            use_sliding_window=False,
            use_local_attention=False,
            num_sms=132,
            dcp_world_size=1,
        )
        decisions.append(theirs.use_cascade_attention(**kwargs))
        assert ours.use_cascade_attention(**kwargs) == decisions[-1]
    assert decisions[0] is True and decisions[2] is False and decisions[3] is False


def test_impl_with_forest_off_takes_upstreams_forward(tiny_llama_dir, distributed_cpu):
    """The impl's only branch into forest code is ``forest_applies``; it is False for
    every metadata the fork's builder makes without a forest config."""
    from forest_env import cpu_config
    from vllm.config import set_current_vllm_config

    from arctic_inference.vllm.attention import flash_attn_fork as fork
    from arctic_inference.vllm.attention.hooks import forest_applies

    _, ours = _builders(tiny_llama_dir)
    decode, _ = _real_batch(tiny_llama_dir)
    with set_current_vllm_config(cpu_config(tiny_llama_dir)):
        impl = fork.FlashAttentionImpl(4, 16, 0.25, 2, None, None, "auto")
    for common in (decode, _mixed_batch(decode)):
        meta = ours.build(0, common)
        assert not forest_applies(impl, meta)
    # ... while a plan would be taken: the check is not vacuous.
    _, planned = _builders(tiny_llama_dir, forest_cascade_attn_configs="{}")
    assert forest_applies(impl, planned.build(0, decode))
