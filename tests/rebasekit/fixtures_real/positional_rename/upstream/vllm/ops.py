def apply(logits, expanded_mapping, scale):
    return logits


def sample(logits, mapping):
    return apply(logits, mapping, 1.0)
