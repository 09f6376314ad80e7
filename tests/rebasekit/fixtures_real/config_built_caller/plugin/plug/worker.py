from vllm.runner import Runner


class PlugRunner(Runner):
    pass


class PlugWorker:
    def init_device(self):
        self.runner = PlugRunner()


class PlugPlatform:
    def configure(self, config):
        if config.worker_cls == "auto":
            # upstream's Worker is the only caller chain passing dtype=
            config.worker_cls = "plug.worker.PlugWorker"
