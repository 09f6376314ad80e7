"""The layout the model runner is in during one engine step or dummy run.

vLLM's runner decides a step's padding, and so its CUDA-graph key, in
``_determine_batch_execution_and_padding``, which both a real step
(``execute_model``) and a capture or warm-up run (``_dummy_run``) call before
the forward. The patches open a :meth:`StepLayouts.scope` around each of the
two and call :meth:`StepLayouts.enter` with the padded batch descriptor; the
layout (:func:`~.shift.batch_mode` of it) is installed there -- vLLM's TP group
(:func:`.groups.step`), with shift parallelism the folded weight views, and for
a capture the layout's groups readied for it (:func:`.groups.capture`) -- and
stays until the scope closes, so it also covers what runs after the
forward (logits). Capture and replay of one graph key therefore run in one
layout; outside a scope the model is in the SP layout, as loaded.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

from arctic_inference.vllm.ulysses import groups
from arctic_inference.vllm.ulysses.folded_model import FoldedModel
from arctic_inference.vllm.ulysses.shift import PaddedBatch, StepMode, batch_mode
from arctic_inference.vllm.ulysses.sp_args import ShiftSettings


@dataclasses.dataclass
class _Frame:
    stack: contextlib.ExitStack
    capturing: bool
    mode: StepMode | None = None


class StepLayouts:
    """Installs the layout of each step once its padded batch is known."""

    def __init__(self, settings: ShiftSettings, folded: FoldedModel | None) -> None:
        if settings.enabled and folded is None:
            raise ValueError("shift parallelism needs the model's folded layout.")
        self.settings = settings
        self.folded = folded
        self._frames: list[_Frame] = []

    @contextlib.contextmanager
    def scope(self, capturing: bool = False) -> Iterator[None]:
        """One engine step or dummy run; the layout it entered is undone on exit.

        ``capturing``: the dummy run captures a CUDA graph, so the groups of its
        layout are readied for capture too (:func:`.groups.capture`). Scopes nest
        (a step may run a dummy batch before its own dispatch); each restores
        what was installed before it.
        """
        with contextlib.ExitStack() as stack:
            self._frames.append(_Frame(stack, capturing))
            try:
                yield
            finally:
                self._frames.pop()

    def enter(self, batch: PaddedBatch) -> StepMode:
        """Install the layout of ``batch`` (vLLM's padded descriptor) for the open scope."""
        mode = batch_mode(batch, self.settings)
        if not self._frames:
            current = groups.current_mode() or StepMode.SP
            if mode is not current:
                raise RuntimeError(
                    f"a batch of {batch.num_tokens} tokens was dispatched outside an engine "
                    f"step or dummy run; it needs the {mode.value} layout, the model is in "
                    f"the {current.value} one."
                )
            return mode
        frame = self._frames[-1]
        if frame.mode is not None:
            if frame.mode is not mode:
                raise RuntimeError(
                    f"one step was dispatched twice, in the {frame.mode.value} and the "
                    f"{mode.value} layout."
                )
            return mode
        frame.stack.enter_context(groups.step(mode))
        if self.folded is not None:
            frame.stack.enter_context(self.folded.step(mode))
        if frame.capturing:
            frame.stack.enter_context(groups.capture(mode))
        frame.mode = mode
        return mode

    @property
    def mode(self) -> StepMode | None:
        """The layout of the innermost open scope (``None``: none entered yet)."""
        return self._frames[-1].mode if self._frames else None

    @property
    def capturing(self) -> bool:
        """Whether the innermost open scope captures a CUDA graph."""
        return bool(self._frames) and self._frames[-1].capturing
