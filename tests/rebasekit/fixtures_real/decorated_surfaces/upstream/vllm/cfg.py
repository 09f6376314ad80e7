import functools
from typing import overload


@overload
def pick(name: str) -> str: ...


@overload
def pick(name: str, *, default: int) -> int: ...


class Runner:
    def step(self, x, y=None):
        return x


def support_torch_compile(cls=None, *, dynamic_arg_dims=None):
    def wrap(klass):
        return klass

    return wrap(cls) if cls is not None else wrap


@support_torch_compile
class Model:
    def __init__(self, *, vllm_config, prefix=""):
        self.prefix = prefix


@support_torch_compile(dynamic_arg_dims={"x": 0})
class Other:
    def __init__(self, *, vllm_config, prefix=""):
        self.prefix = prefix


def deprecate_kwargs(*names):
    def decorator(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            return fn(*args, **kwargs)

        return inner

    return decorator


@deprecate_kwargs("old")
def load(path, *, strict=False):
    return path
