from vllm.proposer import Proposer


class PlugProposer(Proposer):
    def run(self, n):
        if self.method == "fast":
            return self.build_inputs(n)
        return {}


class PlugFastProposer(PlugProposer):
    def build_inputs(self, n):
        return {"n": n}


class PlugSlowProposer(PlugProposer):
    pass


def make(method):
    if method == "fast":
        return PlugFastProposer(method)
    return PlugSlowProposer(method)
