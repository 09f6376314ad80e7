"""Dataclass outputs, vllm.envs reads, captures and a copied sampler."""

import vllm.envs as envs
from vllm.outputs import RunnerOutput
from vllm.runner import Runner
from vllm.sampler import Sampler

_orig_prepare = Runner.prepare  # ok: RK221
_orig_old = Runner.old_name

try:
    _orig_tried = Runner.old_name
except AttributeError:
    _orig_tried = None


def make(ids):
    first = RunnerOutput(req_ids=ids, kv_output=None)  # ok: RK306
    return first, RunnerOutput(req_ids=ids, finished_sending=set())


def flags():
    on = envs.VLLM_USE_V1  # ok: RK308
    return on, envs.VLLM_OLD_FLAG


class MySampler(Sampler):
    def sample(self, logits, temperature):
        logits = logits / temperature
        probs = logits.softmax(dim=-1)
        top = probs.argmax(dim=-1)
        self.last = top
        return top


class DelegatingSampler(Sampler):
    def sample(self, logits, temperature):  # ok: RK405
        self.calls = 1
        return super().sample(logits, temperature)
