from dataclasses import dataclass


@dataclass
class EngineArgs:
    model: str = "m"
    backend: str | None = None

    def __post_init__(self):
        if not self.model:
            raise ValueError("model")
