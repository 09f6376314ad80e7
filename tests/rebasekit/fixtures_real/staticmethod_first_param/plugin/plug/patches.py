from vllm.args import EngineArgs

from plug.patching import ArcticPatch


class EngineArgsPatch(ArcticPatch[EngineArgs]):
    _orig_add_cli_args = EngineArgs.add_cli_args

    @staticmethod
    def add_cli_args(parser):
        # a staticmethod's first parameter is the parser, not an EngineArgs instance
        parser = EngineArgsPatch._orig_add_cli_args(parser)
        group = parser.add_argument_group(title="plug")
        group.add_argument("--plug-size", type=int, default=1)
        return parser
