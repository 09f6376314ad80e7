from vllm.args import EngineArgs

from plug.patching import ArcticPatch


class EngineArgsPatch(ArcticPatch[EngineArgs]):
    # the plain function under the classmethod, read from the class namespace
    _orig_from_cli_args = EngineArgs.__dict__["from_cli_args"].__wrapped__

    @classmethod
    def from_cli_args(cls, args):
        return EngineArgsPatch._orig_from_cli_args(cls, args)
