def cdiv(a, b):
    return -(a // -b)


def round_up(x, multiple):
    if multiple <= 0:
        raise ValueError("multiple must be positive")
    return cdiv(x, multiple) * multiple


def clamp(x, lo, hi):
    return max(lo, min(x, hi))


def align(x):
    return round_up(x, 16)
