from arctic_inference.patching import ArcticPatch
from vllm.worker.runner import Runner
from vllm.worker.scheduler import Scheduler


class RunnerPatch(ArcticPatch[Runner]):
    _orig___init__ = Runner.__init__

    def __init__(self, config, max_len):
        RunnerPatch._orig___init__(self, config, max_len)
        # RK304: `positions` became a plain tensor at 1.1.0 (no .gpu any more).
        self.positions_view = self.positions.gpu
        # RK303: Runner no longer assigns `block_size` at 1.1.0.
        self.page_size = self.block_size * 2
        # negatives: unchanged attributes.
        self.limit = self.max_len + 1  # ok: RK303,RK304
        self.lens_view = self.seq_lens.np  # ok: RK303,RK304

    def prepare(self, batch):  # ok: RK402
        # Mirrors Runner.prepare (unchanged upstream): no RK402.
        total = 0
        for req in batch:
            total += len(req) + 1
        return total

    def execute(self, batch):
        # Mirrors Runner.execute; upstream changed another line: port merges cleanly.
        n = self.prepare(batch) * 2
        out = []
        for i in range(n):
            out.append(i * 2)
        if not out:
            return None
        return out

    def finish(self, out):
        # Mirrors Runner.finish; upstream changed the same line: port conflicts.
        result = list(out)
        result.sort(key=abs)
        return result


class SchedulerPatch(ArcticPatch[Scheduler]):  # ok: RK401
    _orig___init__ = Scheduler.__init__
    _orig_schedule = Scheduler.schedule

    def __init__(self):
        # Upstream 1.1.0 adds an unrelated v2.policy.Scheduler interface that also has an
        # ``__init__``; sharing only a dunder is no evidence of a parallel implementation.
        SchedulerPatch._orig___init__(self)
        self.rounds = 0

    def schedule(self, requests):
        # A wrapper, not a copy; Scheduler has no second implementation (RK401 negative).
        return SchedulerPatch._orig_schedule(self, requests)[::-1]
