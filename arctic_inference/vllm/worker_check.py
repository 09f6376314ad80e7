"""Worker-side runtime check: the worker and model runner vLLM built are patched.

Split from :mod:`arctic_inference.vllm.runtime_check` because it imports
``vllm.v1.worker.gpu_worker`` (and, when it runs, the model runner): only
worker features name this module, so it is imported inside the worker (from
``WorkerBase.__init__``), never by the front end or the engine core.
"""

from __future__ import annotations

from typing import Any

from vllm.logger import init_logger
from vllm.v1.worker.gpu_worker import Worker

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.runtime_check import banner, verify_instance

logger = init_logger(f"vllm.{__name__}")


def verify_worker(worker: Worker) -> str:
    """Check the worker and its model runner; return the banner line."""
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    from arctic_inference.vllm.patch_set import enabled_features

    verify_instance(worker, "worker", Worker)
    runner = getattr(worker, "model_runner", None)
    verify_instance(runner, "model runner", GPUModelRunner)
    label = "V1 runner" if isinstance(runner, GPUModelRunner) else "UNPATCHED runner"
    return banner(label, enabled_features("worker", getattr(worker, "vllm_config", None)))


class WorkerPatch(ArcticPatch[Worker]):
    """Verify the model runner right after vLLM creates it; log the banner."""

    _orig_init_device = Worker.init_device

    def init_device(self) -> Any:
        result = WorkerPatch._orig_init_device(self)
        logger.info(verify_worker(self))
        return result
