from vllm.worker.runner import Runner


class Worker:
    def __init__(self, config):
        self.config = config

    def init_device(self):
        self.runner = Runner(self.config, 16)
