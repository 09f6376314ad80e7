"""Patches and subclasses of the runner: each line marked ok still works at 1.1.0."""

from vllm.runner import Runner, Worker

from driftplug.patching import Patch


class RunnerPatch(Patch[Runner]):
    _orig_propose = Runner.propose

    def step(self, batch):
        self.helper(batch, b=1)  # ok: RK305
        self.prepare(batch)
        return self.old_name(batch)

    def propose(self, tokens, attn_metadata, hidden=None):
        self._orig_propose(tokens, attn_metadata, hidden=hidden)
        return self._orig_propose(tokens, hidden=hidden)  # ok: RK218

    def load_model(self):
        return None


class WorkerPatch(Patch[Worker]):
    def __init__(self, vllm_config, rank, *, is_driver):  # ok: RK217
        self.config = vllm_config
        self.workers = vllm_config.compilation_config.workers  # ok: RK313
        self.level = vllm_config.compilation_config.level


class MyWorker(Worker):
    def __init__(self, config, rank):
        super().__init__(config=config, rank=rank)


class GoodWorker(Worker):
    def __init__(self, config, rank):
        super().__init__(vllm_config=config, rank=rank, is_driver=False)  # ok: RK307
