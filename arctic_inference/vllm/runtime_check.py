"""Fail loudly when vLLM runs classes the Arctic patches do not reach.

vLLM picks its scheduler, worker and model runner at runtime; if it picks one
the patches were not written for (the V2 model runner is the usual case),
every patch would silently do nothing. These checks look at the objects vLLM
actually built and raise (or, with ARCTIC_INFERENCE_SKIP_RUNTIME_CHECK=1,
warn). The worker check also logs the one-line banner naming active patches.
"""

from __future__ import annotations

import inspect
from typing import Any

import vllm
from vllm.v1.engine.core import EngineCore
from vllm.v1.worker.gpu_worker import Worker

from arctic_inference import envs
from arctic_inference.patching import ArcticPatch, applied_patches
from arctic_inference.utils import get_logger

logger = get_logger(__name__)

V1_RUNNER_FIX = (
    "Arctic Inference patches the V1 model runner: run with "
    "VLLM_USE_V2_MODEL_RUNNER=0 (the plugin sets it when it loads early enough), "
    "or unset ARCTIC_INFERENCE_ENABLED to run vLLM unpatched."
)


class ArcticBypassError(RuntimeError):
    """vLLM instantiated a class that the active patches do not reach."""


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _fail(message: str) -> None:
    if envs.skip_runtime_check():
        logger.warning("%s (ignored: %s=1)", message, envs.SKIP_RUNTIME_CHECK)
        return
    raise ArcticBypassError(message)


def overridden_patch_attributes(obj: Any) -> list[str]:
    """Patched attributes that ``type(obj)`` resolves to something else.

    A subclass that overrides a patched method may skip the patch (unless it
    calls ``super()``), so these are reported as warnings, not errors.
    """
    found = []
    mro = type(obj).__mro__
    for record in applied_patches():
        target = record.target_object
        if not isinstance(target, type) or target not in mro:
            continue
        for change in record.attributes:
            installed = vars(target).get(change.name)
            resolved = inspect.getattr_static(type(obj), change.name, None)
            if installed is not None and resolved is not installed:
                found.append(f"{_qualname(type(obj))}.{change.name} (patched on {record.target})")
    return found


def verify_instance(obj: Any, role: str, expected: type) -> None:
    """Check that vLLM's ``role`` object is a patched ``expected`` instance."""
    if not isinstance(obj, expected):
        _fail(
            f"Arctic Inference is enabled but vLLM built its {role} as "
            f"{_qualname(type(obj))}, which is not a {_qualname(expected)}; the "
            f"Arctic patches would be bypassed. {V1_RUNNER_FIX}"
        )
        return
    overridden = overridden_patch_attributes(obj)
    if overridden:
        logger.warning(
            "Arctic patches may be bypassed by overrides in the %s: %s",
            role,
            ", ".join(overridden),
        )


def active_patch_names() -> list[str]:
    return [record.patch for record in applied_patches()]


def banner(runner_label: str) -> str:
    return (
        f"Arctic Inference active (vLLM {vllm.__version__}, {runner_label}): "
        f"patches=[{', '.join(active_patch_names())}]"
    )


def verify_engine_core(core: EngineCore) -> None:
    """Scheduler and runner choice of an engine core (once per instance)."""
    if core.__dict__.get("_arctic_verified"):
        return
    core.__dict__["_arctic_verified"] = True
    from vllm.v1.core.sched.scheduler import Scheduler

    if core.vllm_config.use_v2_model_runner:
        _fail(
            "Arctic Inference is enabled but this engine is configured for the V2 "
            f"model runner. {V1_RUNNER_FIX}"
        )
    verify_instance(core, "engine core", EngineCore)
    verify_instance(core.scheduler, "scheduler", Scheduler)


class EngineCorePatch(ArcticPatch[EngineCore]):
    """Verify the engine core after construction, or at the latest on its first step.

    The post-``__init__`` check covers the in-process and forked engine core.
    A spawned engine core loads the plugin from inside ``EngineCore.__init__``,
    too late to wrap that call, but ``step_fn`` is bound after the plugin
    loaded, so the step wrappers still verify before any work is done.
    """

    _orig___init__ = EngineCore.__init__
    _orig_step = EngineCore.step
    _orig_step_with_batch_queue = EngineCore.step_with_batch_queue

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        EngineCorePatch._orig___init__(self, *args, **kwargs)
        verify_engine_core(self)

    def step(self) -> Any:
        if not self.__dict__.get("_arctic_verified"):
            verify_engine_core(self)
        return EngineCorePatch._orig_step(self)

    def step_with_batch_queue(self) -> Any:
        if not self.__dict__.get("_arctic_verified"):
            verify_engine_core(self)
        return EngineCorePatch._orig_step_with_batch_queue(self)


def verify_worker(worker: Worker) -> str:
    """Check the worker and its model runner; return the banner line."""
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    verify_instance(worker, "worker", Worker)
    runner = getattr(worker, "model_runner", None)
    verify_instance(runner, "model runner", GPUModelRunner)
    label = "V1 runner" if isinstance(runner, GPUModelRunner) else "UNPATCHED runner"
    return banner(label)


class WorkerPatch(ArcticPatch[Worker]):
    """Verify the model runner right after vLLM creates it; log the banner."""

    _orig_init_device = Worker.init_device

    def init_device(self) -> Any:
        result = WorkerPatch._orig_init_device(self)
        logger.info(verify_worker(self))
        return result
