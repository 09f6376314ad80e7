from typing import overload


@overload
def pick(name: str) -> str: ...


@overload
def pick(name: str, *, default: int) -> int: ...


class Runner:
    def step(self, x, y=None):
        return x
