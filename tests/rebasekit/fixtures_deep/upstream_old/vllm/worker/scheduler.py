class Scheduler:
    def schedule(self, requests):
        return sorted(requests)
