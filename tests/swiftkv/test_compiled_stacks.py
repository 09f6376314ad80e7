"""The two compiled regions of LlamaSwiftKVForCausalLM, checked on the CPU.

Each stack must trace as one full graph (``fullgraph=True``: no data-dependent
branch inside) holding exactly its own layers' attention ops; the batch-dependent
work (which path, the bulk write, the gather) stays outside. The tracer stops
right after Dynamo hands over the graph, so no kernel runs on this host.
"""

from __future__ import annotations

import pytest
import torch

from tests.swiftkv.conftest import SHAPE, build_vllm_model


class _Traced(Exception):
    """Raised by the recording backend once it holds the graph."""


def _trace(fn, *args) -> tuple[torch.fx.GraphModule, list]:
    graphs: list[tuple[torch.fx.GraphModule, list]] = []

    def record(gm, example_inputs):
        graphs.append((gm, list(example_inputs)))
        raise _Traced

    compiled = torch.compile(fn, fullgraph=True, backend=record, dynamic=True)
    with pytest.raises(Exception) as info:
        compiled(*args)
    assert isinstance(info.value.__cause__ or info.value, _Traced) or "_Traced" in repr(
        info.value
    ), info.value
    assert len(graphs) == 1
    return graphs[0]


def _layer_name(value) -> str:
    """A layer-name argument as traced: a string, or vLLM's (fake) LayerName object."""
    value = getattr(value, "real_obj", value)
    return getattr(value, "value", value)


def _attention_layers(traced: tuple[torch.fx.GraphModule, list]) -> list[str]:
    """Layer names of the attention ops in the graph, in order."""
    gm, inputs = traced
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    example = dict(zip(placeholders, inputs))
    names = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and "unified_attention_with_output" in str(node.target):
            arg = node.args[4]
            names.append(_layer_name(example.get(arg, arg)))
    return names


def _placeholders(traced) -> set[str]:
    return {str(n.target) for n in traced[0].graph.nodes if n.op == "placeholder"}


@pytest.fixture
def opaque_attention(monkeypatch):
    """Attention layers call vLLM's registered ops (as on CUDA), which Dynamo traces."""
    from vllm.platforms import current_platform

    monkeypatch.setattr(current_platform, "opaque_attention_op", lambda *a, **k: True)


def test_each_stack_traces_as_one_graph_of_its_own_layers(
    tp_group, registered, triton_attention_backend, opaque_attention, ckpt_dir
):
    from vllm.config import set_current_vllm_config

    cfg, model, _, _ = build_vllm_model(ckpt_dir)
    m = model.model
    t = 7
    kv = SHAPE["num_key_value_heads"] * SHAPE["hidden_size"] // SHAPE["num_attention_heads"]
    with set_current_vllm_config(cfg), torch.no_grad():
        bottom = _trace(m.bottom.forward, torch.arange(t), torch.arange(t), None)
        h = torch.randn(t, SHAPE["hidden_size"])
        k = torch.randn(t, 2 * kv)
        top = _trace(m.top.forward, torch.arange(t), h, h.clone(), k, k.clone())
    assert _attention_layers(bottom) == [
        "model.layers.0.self_attn.attn",
        "model.layers.1.self_attn.attn",
    ]
    assert _attention_layers(top) == [
        "model.layers.2.self_attn.attn",
        "model.layers.3.self_attn.attn",
    ]
    # The boundary projection is part of the bottom graph, not of the top one.
    assert any("swiftkv_kv_proj" in p for p in _placeholders(bottom))
    assert not any("swiftkv_kv_proj" in p for p in _placeholders(top))


def test_stacks_are_compilation_units_unless_compilation_is_off(
    tp_group, registered, triton_attention_backend, ckpt_dir
):
    from vllm.compilation.wrapper import TorchCompileWithNoGuardsWrapper
    from vllm.config import CompilationConfig, CompilationMode

    cfg, model, loaded, _ = build_vllm_model(ckpt_dir)
    assert cfg.compilation_config.mode == CompilationMode.VLLM_COMPILE
    for stack in (model.model.bottom, model.model.top):
        assert isinstance(stack, TorchCompileWithNoGuardsWrapper)
        assert stack.do_not_compile is False
    # The token dimension of every tensor argument is dynamic (read from the annotations).
    assert model.model.bottom._dynamic_arg_dims == {
        "input_ids": 0,
        "positions": 0,
        "inputs_embeds": 0,
    }
    assert model.model.top._dynamic_arg_dims == dict.fromkeys(
        ("positions", "hidden_states", "residual", "k", "v"), 0
    )
    # The stacks only reference the model's modules: names stay the checkpoint's.
    names = {n for n, _ in model.named_parameters()}
    assert loaded == names
    assert not any(".bottom." in n or ".top." in n for n in names)

    off = CompilationConfig(mode=CompilationMode.NONE)
    _, eager, _, _ = build_vllm_model(ckpt_dir, compilation_config=off)
    assert eager.model.bottom.do_not_compile and eager.model.top.do_not_compile


def test_switched_off_checkpoint_has_no_top_stack(
    tp_group, registered, triton_attention_backend, tmp_path
):
    from tests.swiftkv.conftest import make_ckpt

    _, model, _, _ = build_vllm_model(make_ckpt(tmp_path, "off", kv_layers=4))
    assert model.model.top is None
    assert model.model.bottom.do_not_compile is False
