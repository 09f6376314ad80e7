from vllm.worker import Worker

from plug.patching import ArcticPatch


class WorkerPatch(ArcticPatch[Worker]):
    _orig_sleep = Worker.sleep

    def sleep(self, level: int = 1) -> None:
        # the alias is copied onto Worker with the rest: through self it is a bound call
        self._orig_sleep(level=level)
