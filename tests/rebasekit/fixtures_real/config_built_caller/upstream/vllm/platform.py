class GpuPlatform:
    def configure(self, config):
        if config.worker_cls == "auto":
            config.worker_cls = "vllm.worker.Worker"
