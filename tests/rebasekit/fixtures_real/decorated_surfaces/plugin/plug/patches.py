from typing import overload

from vllm.cfg import Runner, pick

from plug.build import timed
from plug.patching import ArcticPatch


class RunnerPatch(ArcticPatch[Runner]):
    _orig_step = Runner.step

    @overload
    def step(self, x: int) -> int: ...

    @overload
    def step(self, x: str) -> str: ...

    @timed
    def step(self, x, y=None):
        chosen = pick("mode", default=1)
        return RunnerPatch._orig_step(self, x, y), chosen
