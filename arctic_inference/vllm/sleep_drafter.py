"""Keep the speculative drafter across level-2 sleep.

What vLLM 0.26.0 does (``vllm/v1/worker/gpu_worker.py``): with
``enable_sleep_mode=True`` every weight — the target model's *and* the
drafter's, both loaded inside the ``"weights"`` CuMemAllocator pool — is
discarded by ``sleep(level=2)`` (level 1 offloads them to host memory and
brings them back intact). Before discarding, ``Worker.sleep`` saves only the
*target* model's buffers; ``wake_up`` maps fresh, uninitialised memory back
and restores those buffers, and the caller then reloads the target's
parameters with ``reload_weights`` (which reads ``model_runner.get_model()``
only). Nothing restores the drafter (``model_runner.drafter.model``): it
wakes up with garbage weights and buffers. Verification keeps greedy output
correct, but the drafts are worthless and the speed-up is gone.

This patch saves the drafter's parameters and buffers to host memory (pinned
when the platform allows) just before a level-2 sleep and copies them back
when the weights are woken up. Tensors the drafter shares with the target
(EAGLE-style heads that reuse the target's embedding or LM head) are left
out: they belong to the target and come back with its reload. The restore
happens inside ``wake_up``, i.e. *before* any ``reload_weights``, so a shared
tensor that the reload updates is never overwritten with a stale copy.

Enabled by ``--sleep-keep-drafter`` / ``ARCTIC_SLEEP_KEEP_DRAFTER=1``. The
patch is applied when some engine in the process turns the knob on; each
worker then follows its own ``vllm_config`` (several engines may share a
process), so a worker whose engine left the knob off sleeps as in stock vLLM.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection

import torch
from torch import nn
from vllm.logger import init_logger
from vllm.utils.platform_utils import is_pin_memory_available
from vllm.v1.worker.gpu_worker import Worker

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.rl_args import sleep_keep_drafter_enabled

__all__ = [
    "DrafterSnapshot",
    "WorkerSleepKeepDrafterPatch",
    "keeps_drafter",
    "restore_module_state",
    "snapshot_module_state",
    "storage_ptrs",
]

logger = init_logger(f"vllm.{__name__}")

DrafterSnapshot = dict[str, torch.Tensor]


def _named_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """Parameters and buffers by name (each shared tensor listed once)."""
    state: dict[str, torch.Tensor] = {}
    for name, tensor in itertools.chain(module.named_parameters(), module.named_buffers()):
        state.setdefault(name, tensor)
    return state


def storage_ptrs(module: nn.Module | None) -> set[int]:
    """Addresses of the storages behind a module's parameters and buffers."""
    if module is None:
        return set()
    return {
        t.untyped_storage().data_ptr()
        for t in itertools.chain(module.parameters(), module.buffers())
    }


def snapshot_module_state(
    module: nn.Module,
    *,
    exclude_storages: Collection[int] = frozenset(),
    pin_memory: bool = False,
) -> DrafterSnapshot:
    """Copy every parameter and buffer of ``module`` to host memory.

    Tensors whose storage is in ``exclude_storages`` (owned by another model)
    are skipped. The copies are issued non-blocking into pinned memory when
    ``pin_memory`` and joined with one synchronisation at the end.
    """
    snapshot: DrafterSnapshot = {}
    for name, tensor in _named_state(module).items():
        if tensor.untyped_storage().data_ptr() in exclude_storages:
            continue
        host = torch.empty(tensor.shape, dtype=tensor.dtype, device="cpu", pin_memory=pin_memory)
        host.copy_(tensor.detach(), non_blocking=pin_memory)
        snapshot[name] = host
    if pin_memory and torch.cuda.is_available():
        torch.cuda.synchronize()
    return snapshot


def restore_module_state(module: nn.Module, snapshot: DrafterSnapshot) -> int:
    """Copy a snapshot back into the module's tensors, in place; return bytes.

    In place matters: CUDA graphs and the drafter's forward hold the device
    addresses, which the allocator keeps across sleep. A tensor that has
    disappeared or changed shape/dtype since the snapshot is an error — the
    drafter was rebuilt, and copying would corrupt it.
    """
    state = _named_state(module)
    missing = sorted(set(snapshot) - set(state))
    if missing:
        raise RuntimeError(
            f"Cannot restore the drafter after sleep: {len(missing)} saved "
            f"tensors no longer exist (first: {missing[:3]}). The drafter was "
            "replaced while asleep; reload it instead of restoring it."
        )
    restored = 0
    with torch.no_grad():
        for name, host in snapshot.items():
            live = state[name]
            if live.shape != host.shape or live.dtype != host.dtype:
                raise RuntimeError(
                    f"Cannot restore drafter tensor {name!r}: saved "
                    f"{tuple(host.shape)}/{host.dtype}, now "
                    f"{tuple(live.shape)}/{live.dtype}. The drafter was "
                    "changed while asleep; reload it instead of restoring it."
                )
            live.data.copy_(host, non_blocking=host.is_pinned())
            restored += host.numel() * host.element_size()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return restored


def keeps_drafter(worker: Worker) -> bool:
    """Whether this worker's own engine config asked to keep the drafter."""
    return sleep_keep_drafter_enabled(getattr(worker, "vllm_config", None))


class WorkerSleepKeepDrafterPatch(ArcticPatch[Worker]):
    """Save the drafter to host memory on level-2 sleep; restore it on wake-up."""

    _orig_sleep = Worker.sleep
    _orig_wake_up = Worker.wake_up

    def sleep(self: Worker, level: int = 1) -> None:
        snapshot = getattr(self, "_arctic_drafter_snapshot", None)
        if level == 2 and snapshot is None and keeps_drafter(self):
            drafter = self.get_draft_model()
            if drafter is not None:
                target = self.model_runner.get_model()
                snapshot = snapshot_module_state(
                    drafter,
                    exclude_storages=storage_ptrs(target),
                    pin_memory=is_pin_memory_available(),
                )
                self._arctic_drafter_snapshot = snapshot
                logger.info(
                    "Level-2 sleep: saved %d drafter tensors (%.1f MiB) to host memory.",
                    len(snapshot),
                    sum(t.numel() * t.element_size() for t in snapshot.values()) / 2**20,
                )
        WorkerSleepKeepDrafterPatch._orig_sleep(self, level)

    def wake_up(self: Worker, tags: list[str] | None = None) -> None:
        WorkerSleepKeepDrafterPatch._orig_wake_up(self, tags)
        snapshot = getattr(self, "_arctic_drafter_snapshot", None)
        if snapshot is None or not (tags is None or "weights" in tags):
            return
        drafter = self.get_draft_model()
        if drafter is None:
            raise RuntimeError(
                "A drafter snapshot was taken at level-2 sleep but the model "
                "runner has no drafter on wake-up; was speculative decoding "
                "turned off while asleep?"
            )
        nbytes = restore_module_state(drafter, snapshot)
        self._arctic_drafter_snapshot = None
        logger.info("Wake-up: restored the drafter (%.1f MiB).", nbytes / 2**20)
