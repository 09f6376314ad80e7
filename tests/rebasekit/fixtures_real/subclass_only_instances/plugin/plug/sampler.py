from vllm.runner import Runner
from vllm.sampling import Sampler


def reject(logits, temp):
    return logits


class PlugSampler(Sampler):
    def forward(self, logits):
        return reject(logits, 0.5)


class PlugRunner(Runner):
    def __init__(self, spec):
        super().__init__(spec)
        if spec:
            self.sampler = PlugSampler()


class PlugWorker:
    def init_device(self):
        self.runner = PlugRunner(spec=True)


class PlugPlatform:
    def configure(self, config):
        config.worker_cls = "plug.sampler.PlugWorker"
