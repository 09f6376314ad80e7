class Runner:
    def step(self, x, *, mode):
        return x

    def reset(self):
        return None


def build(name, *, device):
    return name
