class Worker:
    def sleep(self, level: int = 1) -> None:
        pass
