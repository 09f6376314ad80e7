"""A copy of an upstream model class (not a subclass) and the layer it holds."""

from torch import nn

from vllm.model import Engine, Processor

from driftplug.patching import Patch


class RunnerFastForLM(nn.Module):
    def __init__(self):
        self.proc = Processor()

    def forward(self, ids):
        return ids

    def compute(self, hidden, meta):
        self.proc(hidden, hidden, bias=meta)  # ok: RK314
        return self.proc(hidden, hidden, meta)

    def load(self, weights):  # ok: RK406
        return weights


class EnginePatch(Patch[Engine]):
    def hook(self, fn):
        self.net.forward = fn

    def peek(self):
        return self.net.name  # ok: RK315
