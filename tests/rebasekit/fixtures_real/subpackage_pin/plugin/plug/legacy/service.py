# written for vLLM 0.1.0, whose runner module still had OldRunner
from vllm.runner import OldRunner


def serve(x):
    return OldRunner().step(x)
