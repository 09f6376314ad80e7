class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        return parser
