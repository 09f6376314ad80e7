class EngineArgs:
    @classmethod
    def from_cli_args(cls, args):
        return cls()
