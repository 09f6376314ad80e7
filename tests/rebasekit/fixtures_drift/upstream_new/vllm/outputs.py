from dataclasses import dataclass, field


@dataclass
class KVOutput:
    finished_sending: set | None = None


@dataclass
class RunnerOutput:
    req_ids: list
    kv_output: KVOutput | None = None
    cache: dict = field(default_factory=dict, init=False)


def build():
    return RunnerOutput(req_ids=[], kv_output=None)
