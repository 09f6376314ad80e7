"""The step scope: one layout per scope, from the padded batch, undone on exit."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

import pytest

from arctic_inference.vllm.ulysses import groups, step_layout
from arctic_inference.vllm.ulysses.shift import StepMode
from arctic_inference.vllm.ulysses.sp_args import ShiftSettings
from arctic_inference.vllm.ulysses.step_layout import StepLayouts

ON = ShiftSettings(enabled=True, threshold=8)


@dataclasses.dataclass(frozen=True)
class Padded:
    num_tokens: int


class Recorder:
    """Stands in for :class:`FoldedModel` (ours, not vLLM's): logs what is installed."""

    def __init__(self) -> None:
        self.log: list[str] = []

    @contextlib.contextmanager
    def step(self, mode: StepMode) -> Iterator[None]:
        self.log.append(f"enter {mode.value}")
        try:
            yield
        finally:
            self.log.append(f"exit {mode.value}")


def test_a_scope_installs_the_layout_of_its_padded_batch_until_it_closes() -> None:
    folded = Recorder()
    layouts = StepLayouts(ON, folded)  # type: ignore[arg-type]
    with layouts.scope():
        assert layouts.mode is None  # nothing before the dispatch
        assert layouts.enter(Padded(7)) is StepMode.FOLDED
        assert layouts.enter(Padded(7)) is StepMode.FOLDED  # the same batch again: no-op
        folded.log.append("forward and logits")
    assert layouts.mode is None
    assert folded.log == ["enter folded", "forward and logits", "exit folded"]


def test_nested_scopes_restore_the_outer_layout() -> None:
    folded = Recorder()
    layouts = StepLayouts(ON, folded)  # type: ignore[arg-type]
    with layouts.scope():
        layouts.enter(Padded(64))
        with layouts.scope():  # a dummy batch inside a step
            layouts.enter(Padded(1))
            assert layouts.mode is StepMode.FOLDED
        assert layouts.mode is StepMode.SP
    assert folded.log == ["enter sp", "enter folded", "exit folded", "exit sp"]


def test_one_scope_cannot_be_dispatched_in_two_layouts() -> None:
    layouts = StepLayouts(ON, Recorder())  # type: ignore[arg-type]
    with layouts.scope(), pytest.raises(RuntimeError, match="dispatched twice, in the sp"):
        layouts.enter(Padded(8))
        layouts.enter(Padded(1))


def test_a_dispatch_outside_a_scope_may_not_need_another_layout() -> None:
    layouts = StepLayouts(ON, Recorder())  # type: ignore[arg-type]
    assert layouts.enter(Padded(9)) is StepMode.SP  # what the model is in: fine
    with pytest.raises(RuntimeError, match="outside an engine step or dummy run"):
        layouts.enter(Padded(3))


def test_shift_needs_the_folded_layout() -> None:
    with pytest.raises(ValueError, match="needs the model's folded layout"):
        StepLayouts(ON, None)
    sp_only = StepLayouts(ShiftSettings(enabled=False, threshold=8), None)
    with sp_only.scope():
        assert sp_only.enter(Padded(1)) is StepMode.SP


def test_a_capturing_scope_readies_the_groups_of_its_layout_inside_the_layout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folded = Recorder()

    @contextlib.contextmanager
    def capture(mode: StepMode) -> Iterator[None]:
        folded.log.append(f"capture {mode.value}")
        try:
            yield
        finally:
            folded.log.append(f"registered {mode.value}")

    monkeypatch.setattr(step_layout.groups, "capture", capture)
    layouts = StepLayouts(ON, folded)  # type: ignore[arg-type]
    with layouts.scope():  # a warm-up: no capture
        layouts.enter(Padded(1))
    with layouts.scope(capturing=True):
        assert layouts.capturing
        layouts.enter(Padded(1))
    with layouts.scope(capturing=True):
        layouts.enter(Padded(16))
    assert folded.log == [
        "enter folded",
        "exit folded",
        "enter folded",
        "capture folded",
        "registered folded",  # after the graph, before the layout is undone
        "exit folded",
        "enter sp",
        "capture sp",
        "registered sp",
        "exit sp",
    ]


def test_capture_readies_nothing_without_sp_groups_or_in_the_sp_layout() -> None:
    assert groups.current() is None
    for mode in StepMode:
        with groups.capture(mode):
            pass  # no groups: nothing to ready, and no CUDA call
