class Worker:
    def __init__(self, config):
        self.config = config
        self.use_v2_runner = config.use_v2_runner

    def init_device(self):
        if self.use_v2_runner:
            from vllm.worker.v2.runner import Runner as RunnerV2

            self.runner = RunnerV2(self.config, 16)
        else:
            from vllm.worker.runner import Runner

            self.runner = Runner(self.config, 16)
