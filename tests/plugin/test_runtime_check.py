"""Runtime bypass checks on the real vLLM worker, engine core and model runners.

The plugin's own patches are applied to the live classes in this process and
reverted after each test (``reverting_new_patches``); instances are made with
``object.__new__`` because building a real worker needs a GPU, and the checks
only look at classes.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

from vllm.v1.engine.core import DPEngineCoreProc, EngineCore, EngineCoreProc  # noqa: E402
from vllm.v1.worker.gpu_model_runner import GPUModelRunner  # noqa: E402
from vllm.v1.worker.gpu_worker import Worker  # noqa: E402

from arctic_inference import envs  # noqa: E402
from arctic_inference.patching import ArcticPatch, reverting_new_patches  # noqa: E402
from arctic_inference.vllm.runtime_check import (  # noqa: E402
    ArcticBypassError,
    EngineCorePatch,
    calls_super,
    overridden_patch_attributes,
    verify_instance,
)
from arctic_inference.vllm.worker_check import WorkerPatch  # noqa: E402
from arctic_inference.vllm.worker_hook import WorkerBasePatch  # noqa: E402


@pytest.fixture
def plugin_patches(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plugin's bootstrap and check patches on the real classes, for one test."""
    monkeypatch.delenv(envs.SKIP_RUNTIME_CHECK, raising=False)
    with reverting_new_patches():
        for patch in (WorkerBasePatch, EngineCorePatch, WorkerPatch):
            patch.apply()
        yield


def bare(cls: type) -> Any:
    return object.__new__(cls)


def test_worker_init_reaching_the_hook_through_super_is_not_a_bypass(
    plugin_patches: None, caplog: pytest.LogCaptureFixture
) -> None:
    # Worker.__init__ overrides the patched WorkerBase.__init__ and calls super().
    assert "__init__" in vars(Worker)
    worker = bare(Worker)
    assert overridden_patch_attributes(worker) == []
    with caplog.at_level(logging.WARNING, logger="vllm.arctic_inference"):
        verify_instance(worker, "worker", Worker)
    assert "may be bypassed" not in caplog.text


@pytest.mark.parametrize("cls", [EngineCore, EngineCoreProc, DPEngineCoreProc])
def test_real_engine_cores_reach_the_patches(plugin_patches: None, cls: type) -> None:
    assert overridden_patch_attributes(bare(cls)) == []


def test_override_without_super_is_reported(
    plugin_patches: None, caplog: pytest.LogCaptureFixture
) -> None:
    class SkippingWorker(Worker):
        def init_device(self) -> None:  # never reaches WorkerPatch.init_device
            pass

        def __init__(self, vllm_config: Any) -> None:  # never reaches the hook
            self.vllm_config = vllm_config

    class PoliteWorker(SkippingWorker):
        def init_device(self) -> None:
            super().init_device()  # reaches SkippingWorker's, which stops there

    with caplog.at_level(logging.WARNING, logger="vllm.arctic_inference"):
        verify_instance(bare(SkippingWorker), "worker", Worker)
    assert "may be bypassed" in caplog.text
    found = overridden_patch_attributes(bare(SkippingWorker))
    assert len(found) == 2
    assert any(
        ".SkippingWorker.init_device (patched on vllm.v1.worker.gpu_worker.Worker" in f
        for f in found
    )
    assert any(
        ".SkippingWorker.__init__ (patched on vllm.v1.worker.worker_base.WorkerBase" in f
        for f in found
    )
    # A well-behaved subclass of a bypassing class is still cut off.
    assert len(overridden_patch_attributes(bare(PoliteWorker))) == 2


def test_overrides_delegating_with_super_are_accepted(plugin_patches: None) -> None:
    class ZeroArgWorker(Worker):
        def init_device(self) -> None:
            super().init_device()

    class ExplicitWorker(Worker):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)

    assert overridden_patch_attributes(bare(ZeroArgWorker)) == []
    assert overridden_patch_attributes(bare(ExplicitWorker)) == []


def test_v2_model_runner_is_a_bypass_error(
    plugin_patches: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm.v1.worker.gpu.model_runner import GPUModelRunner as V2ModelRunner

    runner = bare(V2ModelRunner)
    with pytest.raises(ArcticBypassError, match="VLLM_USE_V2_MODEL_RUNNER=0"):
        verify_instance(runner, "model runner", GPUModelRunner)
    monkeypatch.setenv(envs.SKIP_RUNTIME_CHECK, "1")
    verify_instance(runner, "model runner", GPUModelRunner)  # only warns now


def logged(func: Any) -> Any:
    """A typical decorator: the wrapper's own code has no super() call."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper


def test_calls_super_reads_the_bytecode() -> None:
    class Base:
        def run(self) -> int:
            return 1

        def other(self) -> int:
            return 2

    class Child(Base):
        def zero_arg(self) -> int:
            return super().run()

        def explicit(self) -> int:
            return super().run()

        def wrong_name(self) -> int:
            return super().other()

        def no_super(self) -> int:
            return Base.other(self) + self.run()

        @property
        def prop(self) -> int:
            return super().run()

        @classmethod
        def klass(cls) -> int:
            return super().run()  # type: ignore[call-arg]

        @logged
        def wrapped(self) -> int:
            return super().run()

    assert calls_super(Child.zero_arg, "run")
    assert calls_super(Child.explicit, "run")
    assert not calls_super(Child.wrong_name, "run")
    assert not calls_super(Child.no_super, "run")
    assert calls_super(vars(Child)["prop"], "run")
    assert calls_super(vars(Child)["klass"], "run")
    assert calls_super(Child.wrapped, "run")
    assert not calls_super(len, "run")  # no bytecode: cannot tell, so "no"


def test_a_class_arctic_patched_itself_is_judged_by_its_original() -> None:
    class Base:
        def run(self) -> str:
            return "base"

    class Child(Base):
        def run(self) -> str:
            return super().run() + "+child"

    class BasePatch(ArcticPatch[Base]):
        _orig_run = Base.run

        def run(self) -> str:
            return BasePatch._orig_run(self) + "+patched"

    class ChildPatch(ArcticPatch[Child]):
        _orig_run = Child.run

        def run(self) -> str:
            return ChildPatch._orig_run(self)

    with reverting_new_patches():
        BasePatch.apply()
        ChildPatch.apply()
        assert Child().run() == "base+patched+child"
        # ChildPatch.run itself has no super() call, but the original it wraps does.
        assert overridden_patch_attributes(Child()) == []
