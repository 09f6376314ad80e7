def cdiv(a, b):
    return -(a // -b)


def round_up(x, multiple):
    return cdiv(x, multiple) * multiple


def clamp(x, lo, hi):
    return max(lo, min(x, hi))
