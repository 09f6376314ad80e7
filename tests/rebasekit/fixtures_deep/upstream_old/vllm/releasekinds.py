"""Upstream side of the release drift kinds (RK310, RK311, RK312), as at 1.0.0."""


class Engine:
    def split(self, x):
        return x, x

    def pair(self, x):
        return x, x

    def start(self):
        self.size = 1

    def stop(self):
        self.size = 0

    def run(self):
        return self.size


def helper(x):
    return x


def kept(x):
    return x
