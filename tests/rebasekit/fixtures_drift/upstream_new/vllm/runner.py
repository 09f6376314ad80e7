class Base:
    def prepare(self, batch, config):
        return batch

    def new_name(self, x):
        return x + 1


class Runner(Base):
    def step(self, batch):
        return self.prepare(batch, self.config)

    def helper(self, a, b=None):
        return a

    def propose(self, tokens, common_metadata, hidden=None):
        return tokens

    def load_model(self, scale_up=False):
        pass


class Worker:
    def __init__(self, vllm_config, rank, *, is_driver):
        self.config = vllm_config

    def init(self, scale_up):
        self.model_runner.load_model(scale_up=scale_up)


def make(cfg):
    return Worker(cfg, 0, is_driver=True)
