import functools

from vllm.cfg import Model, Other, load


def build(cfg):
    return Model(vllm_config=cfg, prefix="m"), Other(vllm_config=cfg), load("p", strict=True)


def timed(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)

    return inner
