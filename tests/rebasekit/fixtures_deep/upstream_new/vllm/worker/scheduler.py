class Scheduler:
    def __init__(self):
        self.queue = []

    def schedule(self, requests):
        return sorted(requests)
