from abc import ABC, abstractmethod


class Scheduler(ABC):
    """Same name, another concept: an interface sharing only ``__init__`` with the patched class."""

    def __init__(self, config):
        self.config = config

    @abstractmethod
    def pick(self, candidates):
        ...
