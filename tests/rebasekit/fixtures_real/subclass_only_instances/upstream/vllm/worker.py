from vllm.runner import Runner


class Worker:
    def init_device(self):
        self.runner = Runner(spec=True)
