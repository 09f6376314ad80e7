from torch import nn


class Processor(nn.Module):
    def forward(self, head, hidden, bias=None):
        return hidden


class RunnerForLM(nn.Module):
    def forward(self, ids):
        return ids

    def compute(self, hidden):
        return hidden

    def load(self, weights):
        return weights


class Wrapper:
    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, key):
        return getattr(self.inner, key)


class Engine:
    def __init__(self, net):
        self.net = net

    def load(self):
        self.net = Processor()
        self.net = Wrapper(self.net)

    def get_net(self):
        if isinstance(self.net, Wrapper):
            return self.net.inner
        return self.net
