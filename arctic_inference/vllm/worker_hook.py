"""Applies the worker-side patch set inside each worker process.

Hook choice: ``WorkerBase.__init__`` (vllm/v1/worker/worker_base.py).

* It runs in the process that will own the GPU, after vLLM forked or spawned
  it, so model-runner modules are imported there and nothing touches CUDA in
  the parent before the fork.
* It receives the real ``VllmConfig``, so worker features can be switched on
  Arctic values.
* It precedes everything that matters: ``Worker.__init__`` calls it first,
  and the model runner is only created later, in ``Worker.init_device``.
* It is reached on every executor path. With fork the parent's patched class
  is inherited. With spawn the fresh process loads plugins in
  ``WorkerWrapperBase.init_worker`` *before* it resolves and builds the
  worker class, so the patch is in place in time. The in-process executor
  builds the worker in the engine-core process, again after plugin load.

The alternative, ``WorkerWrapperBase.init_worker``, is not reliable: in a
spawned worker the plugin is first loaded from inside that very call, so a
patch on it would only start working for the next worker. The one limit of
this hook: ``Worker.__init__`` itself is already running when worker patches
go in, so worker features must not patch ``Worker.__init__``.
"""

from __future__ import annotations

from typing import Any

from vllm.v1.worker.worker_base import WorkerBase

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.patch_set import apply_side


class WorkerBasePatch(ArcticPatch[WorkerBase]):
    """Apply the WORKER_FEATURES this worker's config enables, before it is set up.

    Runs for every worker, not once per process: a later engine in the same
    process may enable a feature the first one did not (see ``patch_set``).
    """

    _orig___init__ = WorkerBase.__init__

    def __init__(self, vllm_config: Any, *args: Any, **kwargs: Any) -> None:
        apply_side("worker", vllm_config)
        WorkerBasePatch._orig___init__(self, vllm_config, *args, **kwargs)
