class Runner:
    def propose(self, tokens):
        return tokens

    def execute(self, tokens):
        return self.propose(tokens)
