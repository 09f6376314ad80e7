from torch import nn


class Processor(nn.Module):
    def forward(self, head, hidden, meta=None, bias=None):
        return hidden


class RunnerForLM(nn.Module):
    def forward(self, ids):
        return ids

    def compute(self, hidden, meta):
        return hidden

    def load(self, weights):
        return weights


class Engine:
    def __init__(self, net):
        self.net = net

    def load(self):
        self.net = Processor()
