"""The top stack's batch in the prefill path: padding to a captured graph size.

A padded count with no captured graph must never reach a CUDA-graph wrapper
(it would capture at serving time and fail), so the model uses piecewise
graphs only for batch descriptors its full path has already run under.
"""

from __future__ import annotations

import pytest
import torch

from arctic_inference.vllm.swiftkv.top_batch import graph_size, pad_indices
from tests.swiftkv.conftest import build_vllm_model


def test_graph_size_is_the_next_capture_size():
    sizes = [8, 1, 4, 2, 16]
    assert [graph_size(n, sizes) for n in (1, 2, 3, 5, 8, 9, 16)] == [1, 2, 4, 8, 8, 16, 16]
    assert graph_size(17, sizes) is None
    assert graph_size(1, []) is None


def test_pad_indices_repeats_the_last_index():
    idx = torch.tensor([3, 9, 20])
    assert pad_indices(idx, 3) is idx
    assert pad_indices(idx, 5).tolist() == [3, 9, 20, 20, 20]
    with pytest.raises(ValueError, match="cannot pad 3 indices to 2 rows"):
        pad_indices(idx, 2)


@pytest.fixture
def graphed_model(tp_group, registered, triton_attention_backend, ckpt_dir):
    from vllm.config import CUDAGraphMode

    def piecewise_graphs(cfg) -> None:
        # This GPU-less host's platform turns CUDA graphs off; a CUDA one keeps them.
        cc = cfg.compilation_config
        cc.cudagraph_mode = CUDAGraphMode.PIECEWISE
        cc.cudagraph_capture_sizes = [1, 2, 4, 8]
        cc.max_cudagraph_capture_size = 8

    cfg, model, _, _ = build_vllm_model(ckpt_dir, adjust=piecewise_graphs)
    return cfg, model.model


def test_top_stack_uses_graphs_only_for_captured_descriptors(graphed_model):
    from vllm.config import CUDAGraphMode
    from vllm.forward_context import BatchDescriptor, get_forward_context, set_forward_context

    cfg, m = graphed_model
    assert m._top_inputs is not None and m._top_inputs.rows == 8
    batch = BatchDescriptor(num_tokens=512)
    with set_forward_context(
        None, cfg, batch_descriptor=batch, cudagraph_runtime_mode=CUDAGraphMode.NONE
    ):
        ctx = get_forward_context()
        # Nothing captured yet: compiled code without graphs, the batch's own descriptor.
        assert m._top_graph_choice(ctx, 3) == (CUDAGraphMode.NONE, batch, 3)
        m._top_graph_keys.add(BatchDescriptor(num_tokens=4))
        mode, key, rows = m._top_graph_choice(ctx, 3)
        assert (mode, key.num_tokens, key.num_reqs, key.uniform, rows) == (
            CUDAGraphMode.PIECEWISE,
            4,
            None,
            False,
            4,
        )
        # Beyond the largest capture size there is no graph.
        assert m._top_graph_choice(ctx, 9)[0] == CUDAGraphMode.NONE


def test_graph_mode_is_restored_after_the_top_stack(graphed_model):
    from vllm.config import CUDAGraphMode
    from vllm.forward_context import BatchDescriptor, get_forward_context, set_forward_context

    from arctic_inference.vllm.swiftkv.model import _graph_mode

    cfg, _ = graphed_model
    batch = BatchDescriptor(num_tokens=512)
    with set_forward_context(
        None, cfg, batch_descriptor=batch, cudagraph_runtime_mode=CUDAGraphMode.NONE
    ):
        ctx = get_forward_context()
        with pytest.raises(RuntimeError, match="boom"):
            with _graph_mode(ctx, CUDAGraphMode.PIECEWISE, BatchDescriptor(num_tokens=4)):
                assert ctx.cudagraph_runtime_mode == CUDAGraphMode.PIECEWISE
                raise RuntimeError("boom")
        assert (ctx.cudagraph_runtime_mode, ctx.batch_descriptor) == (CUDAGraphMode.NONE, batch)


def test_top_inputs_copy_the_selected_rows(graphed_model):
    _, m = graphed_model
    bufs = m._top_inputs
    t, hidden, kv = 6, bufs.hidden.shape[1], bufs.k.shape[1]
    pos = torch.arange(10, 10 + t)
    h, r = torch.randn(t, hidden), torch.randn(t, hidden)
    k, v = torch.randn(t, kv), torch.randn(t, kv)
    idx = pad_indices(torch.tensor([1, 4]), 4)
    out = bufs.fill(idx, pos, h, r, k, v)
    for got, src in zip(out, (pos, h, r, k, v)):
        assert got.shape[0] == 4
        torch.testing.assert_close(got, src[[1, 4, 4, 4]], rtol=0, atol=0)
    # Views of the persistent buffers: a replayed graph reads these addresses.
    assert out[1].data_ptr() == bufs.hidden.data_ptr()
