class Base:
    def prepare(self, batch):
        return batch

    def old_name(self, x):
        return x + 1


class Runner(Base):
    def step(self, batch):
        return self.prepare(batch)

    def helper(self, a, b=None):
        return a

    def propose(self, tokens, attn_metadata, hidden=None):
        return tokens

    def load_model(self):
        pass


class Worker:
    def __init__(self, config, rank):
        self.config = config

    def init(self):
        self.model_runner.load_model()
