def count_tokens(text):
    words = text.split()
    total = 0
    for word in words:
        total += 1 + len(word) // 8
    return total


def truncate_tokens(tokens, limit):
    if len(tokens) <= limit:
        return tokens
    kept = tokens[:limit]
    return kept


def join_tokens(tokens, sep=" "):
    pieces = [str(t) for t in tokens]
    return sep.join(pieces)
