"""Save/restore of a drafter across level-2 sleep, on a module of real vLLM layers.

What CuMemAllocator does at level 2 (discard the weights pool, map fresh
memory on wake) needs CUDA; here the discard is reproduced by overwriting
every tensor in place, which is what the drafter sees after a real wake-up:
the same tensors (same addresses) with garbage contents. The last tests drive
the real ``Worker.sleep`` / ``Worker.wake_up`` (stock and patched) the same
way; the GPU check (tests/gpu/test_rl_gpu.py) runs them on a real allocator.
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
    expected = {n for n, _ in drafter.named_parameters()} | {n for n, _ in drafter.named_buffers()}
    assert set(snap) == expected


# --- the real Worker.sleep / Worker.wake_up, stock and patched --------------------

TOTAL_BYTES = 1 << 30


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """The raw bytes of a tensor: equal bits, not just equal values (NaN, -0.0)."""
    return tensor.detach().contiguous().view(torch.uint8).clone()


def _unique_tensors(*modules: nn.Module) -> list[torch.Tensor]:
    seen: dict[int, torch.Tensor] = {}
    for module in modules:
        for t in list(module.parameters()) + list(module.buffers()):
            seen.setdefault(t.data_ptr(), t)
    return list(seen.values())


class CpuWeightsPool:
    """A CPU stand-in for vLLM's CuMemAllocator "weights" pool behind the
    sleep-mode backend (the allocator maps and unmaps CUDA virtual memory, so
    it cannot run without a GPU). It does to CPU tensors what the allocator
    does to the pool: level 1 offloads to host and copies back on wake-up;
    level 2 discards at sleep, and wake-up leaves the same tensors (same
    addresses) holding garbage (NaN). A subclass of vLLM's own
    ``SleepModeBackend`` interface is built from it in ``_backend``.
    """

    def __init__(self, *modules: nn.Module) -> None:
        self.tensors = _unique_tensors(*modules)
        self.offloaded: list[torch.Tensor] | None = None

    def suspend(self, level: int) -> None:
        self.offloaded = [t.detach().clone() for t in self.tensors] if level == 1 else None
        _discard(self.tensors)  # unmapped: nothing survives in device memory

    def resume(self, tags: list[str] | None) -> None:
        if tags is not None and "weights" not in tags:
            return
        if self.offloaded is not None:
            with torch.no_grad():
                for live, saved in zip(self.tensors, self.offloaded, strict=True):
                    live.copy_(saved)
        self.offloaded = None


def _backend(pool: CpuWeightsPool):
    from vllm.device_allocator.sleep_mode_backend import SleepModeBackend

    class CpuPoolBackend(SleepModeBackend):
        def suspend(self, level: int = 1) -> None:
            self._state = "SUSPENDED"
            pool.suspend(level)

        def resume(self, tags: list[str] | None = None) -> None:
            pool.resume(tags)
            self._state = "RUNNING"

    return CpuPoolBackend()


@pytest.fixture
def make_worker(models, tiny_llama_dir, monkeypatch):
    """A real ``vllm.v1.worker.gpu_worker.Worker`` built by its own ``__init__``
    from a real ``VllmConfig`` (config-only Llama, CPU device), holding the
    real-layer target and drafter of ``models``.

    Stood in, and why (each needs a CUDA device or driver):
    - pinned host memory for the snapshot: ``is_pin_memory_available`` as seen
      by the patch says False (this CUDA build of torch says True but cannot
      pin without a driver), so the snapshot is plain host memory;
    - ``torch.accelerator.synchronize`` / ``get_memory_info``: no-op and a fixed
      (free, total), so the stock memory report sees 0 bytes freed;
    - the sleep-mode backend (CuMemAllocator): ``CpuWeightsPool`` above, set as
      the worker's ``_sleep_mode_backend`` (the attribute ``__init__`` leaves
      None for lazy creation);
    - the model runner: ``GPUModelRunner.__new__`` with only the attributes
      sleep/wake-up read (``model``, ``drafter``, ``cache_config``); its
      ``__init__`` allocates pinned buffers, which need the CUDA driver. The
      drafter is a real ``DraftModelProposer`` (``__new__``) whose ``model`` is
      the drafter module; ``get_model``/``get_draft_model`` are vLLM's own.
    """
    from vllm.config import DeviceConfig, ModelConfig, VllmConfig
    from vllm.v1.spec_decode.draft_model import DraftModelProposer
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner
    from vllm.v1.worker.gpu_worker import Worker

    import arctic_inference.vllm.sleep_drafter as sleep_drafter

    monkeypatch.setattr(sleep_drafter, "is_pin_memory_available", lambda: False)
    monkeypatch.setattr(torch.accelerator, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(
        torch.accelerator, "get_memory_info", lambda *a, **k: (TOTAL_BYTES // 2, TOTAL_BYTES)
    )
    target, drafter = models

    def make(keep_drafter: bool) -> Worker:
        additional = {"arctic": {"sleep_keep_drafter": True}} if keep_drafter else {}
        config = VllmConfig(
            model_config=ModelConfig(model=str(tiny_llama_dir), skip_tokenizer_init=True),
            device_config=DeviceConfig(device="cpu"),
            additional_config=additional,
        )
        worker = Worker(
            config,
            local_rank=0,
            rank=0,
            distributed_init_method="tcp://127.0.0.1:1",
            is_driver_worker=True,
        )
        runner = GPUModelRunner.__new__(GPUModelRunner)
        runner.model = target
        runner.drafter = DraftModelProposer.__new__(DraftModelProposer)
        runner.drafter.model = drafter
        runner.cache_config = config.cache_config
        worker.model_runner = runner
        worker._sleep_mode_backend = _backend(CpuWeightsPool(target, drafter))
        return worker

    return make


def _drafter_own(drafter: nn.Module) -> dict[str, torch.Tensor]:
    """The drafter's tensors that are not the target's (embed_tokens is shared)."""
    return {n: t for n, t in _all_tensors(drafter).items() if not n.startswith("embed_tokens")}


def _is_nan(tensors) -> bool:
    return all(torch.isnan(t).all() for t in tensors)


@pytest.fixture
def keep_drafter_patch(reverted_patches):
    from arctic_inference.vllm.sleep_drafter import WorkerSleepKeepDrafterPatch

    WorkerSleepKeepDrafterPatch.apply()


def test_patched_worker_level2_sleep_and_wake_restore_the_drafter_bit_for_bit(
    models, make_worker, keep_drafter_patch
):
    from vllm.v1.worker.gpu_worker import Worker

    from arctic_inference.vllm.sleep_drafter import WorkerSleepKeepDrafterPatch

    assert Worker.sleep is WorkerSleepKeepDrafterPatch.__dict__["sleep"]
    target, drafter = models
    worker = make_worker(keep_drafter=True)
    own = _drafter_own(drafter)
    before = {n: _bits(t) for n, t in own.items()}
    addresses = {n: t.data_ptr() for n, t in own.items()}
    target_buffers = {n: _bits(b) for n, b in target.named_buffers()}

    worker.sleep(level=2)
    assert _is_nan(own.values())  # the pool was discarded while asleep
    worker.wake_up()

    assert sorted(own) == ["lm_head.weight", "norm.weight", "rotary.cos_sin_cache"]
    for name, tensor in _drafter_own(drafter).items():
        assert tensor.data_ptr() == addresses[name], f"{name} was replaced, not restored"
        assert torch.equal(_bits(tensor), before[name]), name
    # Stock vLLM restores the target's buffers; its parameters (and the
    # embedding the drafter shares) wait for the caller's reload_weights.
    for name, buffer in target.named_buffers():
        assert torch.equal(_bits(buffer), target_buffers[name]), name
    assert _is_nan(target.parameters())
    assert getattr(worker, "_arctic_drafter_snapshot", None) is None  # host copy freed


def test_stock_worker_level2_wake_leaves_the_drafter_garbage(models, make_worker):
    """The same sequence on the unpatched class: the defect the patch fixes."""
    from vllm.v1.worker.gpu_worker import Worker

    from arctic_inference.vllm.sleep_drafter import WorkerSleepKeepDrafterPatch

    assert Worker.sleep is not WorkerSleepKeepDrafterPatch.__dict__["sleep"]
    _, drafter = models
    worker = make_worker(keep_drafter=True)
    worker.sleep(level=2)
    worker.wake_up()
    assert _is_nan(_drafter_own(drafter).values())


def test_patched_worker_with_the_knob_off_sleeps_as_stock(models, make_worker, keep_drafter_patch):
    _, drafter = models
    worker = make_worker(keep_drafter=False)
    worker.sleep(level=2)
    assert getattr(worker, "_arctic_drafter_snapshot", None) is None
    worker.wake_up()
    assert _is_nan(_drafter_own(drafter).values())


def test_patched_worker_restores_at_the_weights_wake_up_only(
    models, make_worker, keep_drafter_patch
):
    _, drafter = models
    worker = make_worker(keep_drafter=True)
    before = {n: _bits(t) for n, t in _drafter_own(drafter).items()}
    worker.sleep(level=2)
    worker.wake_up(tags=["kv_cache"])
    assert _is_nan(_drafter_own(drafter).values())  # weights still asleep
    assert worker._arctic_drafter_snapshot is not None
    worker.wake_up(tags=["weights"])
    assert {n: _bits(t) for n, t in _drafter_own(drafter).items()}.keys() == before.keys()
    for name, tensor in _drafter_own(drafter).items():
        assert torch.equal(_bits(tensor), before[name]), name


def test_patched_worker_level1_leaves_the_round_trip_to_the_allocator(
    models, make_worker, keep_drafter_patch
):
    _, drafter = models
    worker = make_worker(keep_drafter=True)
    before = {n: _bits(t) for n, t in _all_tensors(drafter).items()}
    worker.sleep(level=1)
    assert getattr(worker, "_arctic_drafter_snapshot", None) is None  # no host copy
    worker.wake_up()
    for name, tensor in _all_tensors(drafter).items():
        assert torch.equal(_bits(tensor), before[name]), name
