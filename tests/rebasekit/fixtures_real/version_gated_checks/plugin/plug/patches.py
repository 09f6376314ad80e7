import vllm
from packaging.version import Version
from vllm.runner import Runner, build

from plug.patching import ArcticPatch
from plug.utils import vllm_version_is


class RunnerPatch(ArcticPatch[Runner]):
    _orig_step = Runner.step

    if vllm_version_is("0.23.0"):

        def step(self, x, *, mode):
            return RunnerPatch._orig_step(self, x, mode=mode)

    else:
        # releases before 0.23.0 took no mode
        def step(self, x):
            return RunnerPatch._orig_step(self, x)


if Version(vllm.__version__) < Version("0.23.0"):

    class ResetPatch(ArcticPatch[Runner]):
        _orig_reset = Runner.reset

        def reset(self, hard):
            return ResetPatch._orig_reset(self, hard)


def make():
    if vllm_version_is("0.23.0"):
        return build("m", device="cpu")
    else:
        return build("m")
