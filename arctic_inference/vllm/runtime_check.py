"""Fail loudly when vLLM runs classes the Arctic patches do not reach.

vLLM picks its scheduler, worker and model runner at runtime; if it picks one
the patches were not written for (the V2 model runner is the usual case),
every patch would silently do nothing. These checks look at the objects vLLM
actually built and raise (or, with ARCTIC_INFERENCE_SKIP_RUNTIME_CHECK=1,
warn). The worker check also logs the one-line banner naming active patches.

This module is engine-side: it must not import worker or model-runner
modules (the front end would pay for ~400 modules it never uses). The worker
check, which needs ``gpu_worker``, lives in :mod:`arctic_inference.vllm.worker_check`.

Overrides: a subclass that redefines a patched method is a bypass only if it
does not hand the call on. ``Worker.__init__`` is the standard example: it
overrides the patched ``WorkerBase.__init__`` but calls ``super().__init__``,
so the patch runs. :func:`bypassing_override` follows the MRO and accepts
an override only when its code calls ``super().<same name>``.
"""

from __future__ import annotations

import dis
import inspect
from typing import Any

import vllm
from vllm.logger import init_logger
from vllm.v1.engine.core import EngineCore

from arctic_inference import envs
from arctic_inference.patching import ORIG_PREFIX, ArcticPatch, applied_patches

logger = init_logger(f"vllm.{__name__}")

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


def _code_of(attribute: object) -> Any:
    """The code object behind a function, method descriptor or property."""
    if isinstance(attribute, property):
        attribute = attribute.fget
    func = inspect.unwrap(getattr(attribute, "__func__", attribute))  # type: ignore[arg-type]
    return getattr(func, "__code__", None)


def calls_super(attribute: object, name: str) -> bool:
    """Whether ``attribute``'s code calls ``super().<name>`` (or ``super(C, x).<name>``).

    Read from the bytecode, so it needs no source file: after ``super`` is
    loaded, the next attribute looked up on the result must be ``name``.
    Code we cannot read (builtins) counts as not delegating.
    """
    code = _code_of(attribute)
    if code is None:
        return False
    after_super = False
    for ins in dis.get_instructions(code):
        if ins.opname == "LOAD_SUPER_ATTR":  # Python >= 3.12
            if ins.argval == name:
                return True
        elif ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval == "super":
            after_super = True
        elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and after_super:
            if ins.argval == name:
                return True
            after_super = False
    return False


def _own_code_for(klass: type, name: str) -> object:
    """What runs first for ``klass.<name>``: an Arctic wrapper's original if
    Arctic patched ``klass`` itself (the wrapper always calls it), else the attribute."""
    value = vars(klass)[name]
    for record in applied_patches():
        if record.target_object is klass and record.patch_class is not None:
            if name in record.aliases and vars(record.patch_class).get(name) is value:
                return vars(record.patch_class)[ORIG_PREFIX + name]
    return value


def bypassing_override(cls: type, target: type, name: str) -> type | None:
    """The class in ``cls``'s MRO whose ``name`` keeps the call from ``target``'s.

    Walks from ``cls`` towards ``target``: every class on the way that defines
    ``name`` must call ``super().<name>``, otherwise it is returned. None means
    a call on a ``cls`` instance reaches ``target.<name>`` (the patch).
    """
    for klass in cls.__mro__:
        if klass is target:
            return None
        if name in vars(klass) and not calls_super(_own_code_for(klass, name), name):
            return klass
    return None


def overridden_patch_attributes(obj: Any) -> list[str]:
    """Patched attributes that ``type(obj)`` overrides without reaching the patch.

    An override that calls ``super()`` into the patched method is fine; one
    that does not may bypass the patch. Reported as warnings, not errors: the
    override may re-implement what the patch needs, which only a human can
    judge.
    """
    found = []
    cls = type(obj)
    for record in applied_patches():
        target = record.target_object
        if not isinstance(target, type) or target not in cls.__mro__:
            continue
        for change in record.attributes:
            if change.name not in vars(target):
                continue
            culprit = bypassing_override(cls, target, change.name)
            if culprit is not None:
                found.append(
                    f"{_qualname(culprit)}.{change.name} (patched on {record.target}; "
                    "the override does not call super())"
                )
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


def banner(runner_label: str, features: tuple[str, ...] | None = None) -> str:
    """The one-line proof in the worker log that the plugin is active.

    ``patches`` are installed process-wide; ``features`` (when given) are
    the ones switched on for this engine's config, which is what differs when
    several engines share a process.
    """
    line = (
        f"Arctic Inference active (vLLM {vllm.__version__}, {runner_label}): "
        f"patches=[{', '.join(active_patch_names())}]"
    )
    if features is not None:
        line += f" features=[{', '.join(features)}]"
    return line


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
