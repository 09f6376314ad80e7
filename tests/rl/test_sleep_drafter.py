"""Save/restore of a drafter across level-2 sleep, on a module of real vLLM layers.

What CuMemAllocator does at level 2 (discard the weights pool, map fresh
memory on wake) needs CUDA; here the discard is reproduced by overwriting
every tensor in place, which is what the drafter sees after a real wake-up:
the same tensors (same addresses) with garbage contents. The Worker wrappers
themselves run on the GPU check (tests/gpu/test_rl_gpu.py).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.vllm

VOCAB, HIDDEN = 128, 64


class _Target(nn.Module):
    def __init__(self):
        super().__init__()
        from vllm.model_executor.layers.rotary_embedding import get_rope
        from vllm.model_executor.layers.vocab_parallel_embedding import (
            ParallelLMHead,
            VocabParallelEmbedding,
        )

        self.embed_tokens = VocabParallelEmbedding(VOCAB, HIDDEN)
        self.rotary = get_rope(16, 256)
        self.lm_head = ParallelLMHead(VOCAB, HIDDEN)


class _Drafter(nn.Module):
    """EAGLE-like: reuses the target's embedding; owns norm, head and a rope."""

    def __init__(self, target: _Target):
        super().__init__()
        from vllm.model_executor.layers.layernorm import RMSNorm
        from vllm.model_executor.layers.logits_processor import LogitsProcessor
        from vllm.model_executor.layers.rotary_embedding import get_rope
        from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead

        self.embed_tokens = target.embed_tokens  # shared with the target
        self.norm = RMSNorm(HIDDEN)
        self.rotary = get_rope(8, 128)  # its own cos/sin cache buffer
        self.lm_head = ParallelLMHead(VOCAB, HIDDEN)
        self.logits_processor = LogitsProcessor(VOCAB)

    def logits(self, token_ids: torch.Tensor) -> torch.Tensor:
        hidden = self.norm.forward_native(self.embed_tokens(token_ids))
        return self.logits_processor(self.lm_head, hidden)


def _randomise(module: nn.Module, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))


def _all_tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    """Parameters and *all* buffers (rope caches are non-persistent: not in
    state_dict, but discarded by sleep all the same)."""
    return dict(module.named_parameters()) | dict(module.named_buffers())


def _discard(tensors) -> None:
    """What a level-2 wake leaves behind: same tensors, garbage contents."""
    with torch.no_grad():
        for t in tensors:
            t.fill_(float("nan"))


@pytest.fixture
def models(in_vllm_config):
    target = _Target()
    drafter = _Drafter(target)
    _randomise(target, 0)
    with torch.no_grad():
        drafter.norm.weight.copy_(torch.rand(HIDDEN) + 0.5)
        drafter.lm_head.weight.copy_(torch.randn(VOCAB, HIDDEN))
    return target, drafter


def test_snapshot_leaves_out_what_the_target_owns(models):
    from arctic_inference.vllm.sleep_drafter import snapshot_module_state, storage_ptrs

    target, drafter = models
    snap = snapshot_module_state(drafter, exclude_storages=storage_ptrs(target))
    assert sorted(snap) == ["lm_head.weight", "norm.weight", "rotary.cos_sin_cache"]
    assert all(t.device.type == "cpu" for t in snap.values())
    for name, host in snap.items():
        live = _all_tensors(drafter)
        assert torch.equal(host, live[name])
        assert host.data_ptr() != live[name].data_ptr()  # a copy, not a view


def test_level2_round_trip_restores_the_drafter(models):
    from arctic_inference.vllm.sleep_drafter import (
        restore_module_state,
        snapshot_module_state,
        storage_ptrs,
    )

    target, drafter = models
    tokens = torch.arange(0, VOCAB, 3)
    before_logits = drafter.logits(tokens)
    before = {n: t.clone() for n, t in _all_tensors(drafter).items()}
    addresses = {n: t.data_ptr() for n, t in _all_tensors(drafter).items()}

    snap = snapshot_module_state(drafter, exclude_storages=storage_ptrs(target))
    _discard(list(drafter.parameters()) + list(drafter.buffers()))
    assert torch.isnan(drafter.logits(tokens)).all()
    # The trainer's reload of the target (new weights) happens after wake-up.
    _randomise(target, 1)
    reloaded_embed = target.embed_tokens.weight.detach().clone()

    nbytes = restore_module_state(drafter, snap)

    assert nbytes == sum(t.numel() * t.element_size() for t in snap.values())
    state = _all_tensors(drafter)
    assert {n: t.data_ptr() for n, t in state.items()} == addresses  # in place
    for name in snap:
        assert torch.equal(state[name], before[name]), name
    # Shared with the target: the drafter sees the target's reloaded weights,
    # the snapshot did not put the stale ones back.
    assert torch.equal(drafter.embed_tokens.weight, reloaded_embed)
    # Functionally: with the embedding reset to its old value, logits match.
    with torch.no_grad():
        drafter.embed_tokens.weight.copy_(before["embed_tokens.weight"])
    torch.testing.assert_close(drafter.logits(tokens), before_logits, rtol=0, atol=0)


def test_without_a_snapshot_the_drafter_stays_broken(models):
    """The failure the feature fixes, shown on the same module."""
    target, drafter = models
    tokens = torch.arange(10)
    _discard(t for n, t in _all_tensors(drafter).items() if not n.startswith("embed"))
    assert torch.isnan(drafter.logits(tokens)).all()


def test_restore_refuses_a_changed_drafter(models):
    from arctic_inference.vllm.sleep_drafter import restore_module_state, snapshot_module_state

    target, drafter = models
    snap = snapshot_module_state(drafter)
    drafter.norm.weight = nn.Parameter(torch.ones(HIDDEN * 2))
    with pytest.raises(RuntimeError, match=r"'norm.weight'.*changed while asleep"):
        restore_module_state(drafter, snap)

    snap = snapshot_module_state(drafter)
    del drafter.norm
    with pytest.raises(RuntimeError, match="no longer exist.*norm.weight"):
        restore_module_state(drafter, snap)


def test_snapshot_of_a_module_without_shared_tensors_is_complete(models):
    from arctic_inference.vllm.sleep_drafter import snapshot_module_state

    _, drafter = models
    snap = snapshot_module_state(drafter)
    expected = {n for n, _ in drafter.named_parameters()} | {
        n for n, _ in drafter.named_buffers()
    }
    assert set(snap) == expected
