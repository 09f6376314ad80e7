from dataclasses import dataclass

from vllm.args import EngineArgs

from plug.patching import ArcticPatch


@dataclass
class PlugArgs:
    ulysses_size: int = 1


@dataclass
class PlugEngineArgs(EngineArgs, PlugArgs):
    pass


class EngineArgsPatch(ArcticPatch[EngineArgs]):
    _orig_post_init = EngineArgs.__post_init__

    def __new__(cls, *args, **kwargs):
        # every EngineArgs built is a PlugEngineArgs: its fields are always there
        if cls is EngineArgs:
            return PlugEngineArgs.__new__(PlugEngineArgs, *args, **kwargs)
        return super(EngineArgs, cls).__new__(cls)

    def __post_init__(self):
        if self.ulysses_size > 1 and self.backend is None:
            self.backend = "mp"
        EngineArgsPatch._orig_post_init(self)
