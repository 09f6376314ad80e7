class GpuPlatform:
    def configure(self, config):
        config.worker_cls = "vllm.worker.Worker"
