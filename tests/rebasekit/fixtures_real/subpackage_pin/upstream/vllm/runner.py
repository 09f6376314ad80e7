class Runner:
    def step(self, x):
        return x
