from vllm.runner import Runner

from plug.patching import ArcticPatch


class RunnerPatch(ArcticPatch[Runner]):
    _orig_step = Runner.step

    def step(self, x):
        return RunnerPatch._orig_step(self, x)
