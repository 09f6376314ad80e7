from vllm.sampling import Sampler


class Runner:
    def __init__(self, spec):
        if spec:
            self.sampler = Sampler()

    def step(self, logits):
        return self.sampler.forward(logits)
