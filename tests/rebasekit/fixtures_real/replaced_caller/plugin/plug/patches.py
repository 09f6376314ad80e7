from vllm.runner import Runner


def propose(self, tokens, sampled):
    # takes one more argument than upstream's, on purpose: execute below passes it
    return tokens + sampled


def execute(self, tokens):
    return self.propose(tokens, [0])


Runner.propose = propose
Runner.execute = execute
