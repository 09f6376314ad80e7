from vllm.runner import Runner


class Worker:
    def init_device(self):
        self.runner = Runner()

    def load(self, backend):
        self.runner.init_zero(backend)
