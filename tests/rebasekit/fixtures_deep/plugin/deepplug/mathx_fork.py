# rebasekit: fork-of vllm/utils/mathx.py@1.0.0
"""Our copy of vllm.utils.mathx with a faster cdiv."""


def cdiv(a, b):
    return (a + b - 1) // b


def round_up(x, multiple):
    return cdiv(x, multiple) * multiple


def clamp(x, lo, hi):
    return max(lo, min(x, hi))
