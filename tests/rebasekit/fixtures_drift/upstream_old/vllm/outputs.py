from dataclasses import dataclass


@dataclass
class RunnerOutput:
    req_ids: list
    finished_sending: set | None = None
